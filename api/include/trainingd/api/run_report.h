// The run report: how rank 0 of a job running in other processes (trainingd-mpi under mpirun)
// tells the daemon what the run does -- one JSON object per line on its standard output, one line
// per run event (engine/job/run_events.h), flushed as it happens:
//
//   {"event":"session","global_step":0}
//   {"event":"scalar","tag":"loss","step":10,"value":0.31,"wall_time":1795625424.5}
//   {"event":"log","severity":"INFO","text":"global_step = 10, loss = 0.31 ..."}
//   {"event":"end","outcome":"completed","global_step":100,"reason":"reached max_steps 100",
//    "final_values":{"test/accuracy":0.83}}
//   {"event":"end","outcome":"stopped","global_step":40,"reason":"stop requested",
//    "final_values":{},"stop_cause":"request"}    (or "time_limit", "disk_full")
//   {"event":"end","error":{"code":"InvalidArgument","message":"..."}}      (could not start)
//
// a split's whole evaluation after its scalars (engine::EvaluationRecorded, api/evaluation_json.h):
//
//   {"event":"evaluation","split":"validation","step":100,...,"confusion_matrix":[[..],..]}
//
// and, at most once a second while steps run, every rank's latest step (engine::RankTimings),
// which also feeds the supervisor's stall watchdog:
//
//   {"event":"progress","global_step":1200,"ranks":[{"compute_ms":27.1,"allreduce_ms":3.0},...]}
//
// Lines that are not reports (other output that reaches the same pipe) are not errors for the
// reader: ParseRunReport returns nullopt for them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "trainingd/engine/job/run_events.h"

namespace trainingd::api {

// The line (with its newline) for `event`. Text that is not valid UTF-8 is written with U+FFFD.
std::string FormatRunReport(const engine::RunEvent& event);

// The event of one line (with or without its newline); nullopt when the line is not a report,
// or is one whose fields are missing or of the wrong type.
std::optional<engine::RunEvent> ParseRunReport(std::string_view line);

}  // namespace trainingd::api
