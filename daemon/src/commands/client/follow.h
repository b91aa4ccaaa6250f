// Following a job to its end over its event stream: `jobs logs -f`, `submit -f`, `resume -f`,
// `wait`, `stop --wait` and `watch` (docs/cli.md#following-a-job); and an experiment over the
// job list's stream (its "experiment" events): `experiments submit -f`, `resume -f`, `wait`,
// `stop --wait`. Both run the one loop described here.
//
// The stream says when something happened; what is printed comes from the API's records, so a
// reconnect can neither lose nor repeat a log line: log lines are read by line number (GET
// .../logs?from=N) whenever the stream carries a log event, after each reconnect and at the end;
// an end state seen on the stream is confirmed by GET .../jobs/{id} (the replayed history of a
// resumed job still holds its earlier end). A dropped stream or a restarted daemon is reconnected
// with Last-Event-ID after a backoff (0.2 s doubling to 5 s), for up to two minutes of failures.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "commands/client/client.h"
#include "trainingd/api/experiment_service.h"

namespace trainingd::daemon::client {

struct FollowOptions {
  bool print_logs = false;  // print the job's log lines on stdout, from line `from_line`
  int64_t from_line = 1;
  bool watch = false;  // the live line of `jobs watch`
  api::Deadline deadline = api::kNoDeadline;
};

// Follows job `id` until it is in an end state (at once when it already is). Returns the exit
// code of how it ended (0, 1, 3), or of why following stopped (124, 130 with a reattach hint on
// stderr, 5, 4, 1), and the job as it ended in *final when it did.
int FollowJob(Client& client, const std::string& id, const FollowOptions& options,
              api::JobInfo* final);

struct ExperimentFollowOptions {
  bool print_changes = false;  // -f: a line on stdout each time the experiment changes
  api::Deadline deadline = api::kNoDeadline;
};

// Follows experiment `id` until it is in an end state (at once when it already is): each
// "experiment" event of it on GET /api/v1/events is confirmed by GET /api/v1/experiments/{id}.
// Returns the exit code as FollowJob does, and the API's object as it ended in *final when it
// did (null otherwise).
int FollowExperiment(Client& client, const std::string& id, const ExperimentFollowOptions& options,
                     nlohmann::json* final);

// Follows the job list's stream until Ctrl-C (exit 130, nothing printed) or a failure:
// `changed` is called with the id of every job whose state changed (also for changes the stream
// replays: the caller compares with what it has shown). `changed` returns false, with *f set,
// to stop. Reconnects as FollowJob does.
int FollowJobList(Client& client,
                  const std::function<bool(const std::string& job_id, Failure* f)>& changed);

// The line `experiments ... -f` prints for a change: "running: trials 3/8 started (1 running,
// 2 waiting), 120 steps, best validation/accuracy 0.8125 (trial 2)", and why it ended.
std::string ExperimentLine(const api::ExperimentInfo& experiment);

// The live line of `jobs watch` for `job` (exposed for tests of its format): state, step/max,
// loss, accuracy, examples/s and ETA, with a bar `bar_width` wide (0 = none); `compact`: shorter
// labels ("acc", "ex/s", no "step") for a narrow terminal.
std::string WatchLine(const api::JobInfo& job, double steps_per_sec, int bar_width, bool compact);

}  // namespace trainingd::daemon::client
