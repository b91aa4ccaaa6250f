// The check `trainingd run`, `validate` and `train` make before they load any data.
#pragma once

#include "trainingd/engine/base/status.h"
#include "trainingd/engine/data/dataset.h"
#include "trainingd/engine/job/job_resources.h"
#include "trainingd/engine/job/job_spec.h"

namespace trainingd::daemon {

// Checks `spec` against what its data holds (`data`, from the files' headers: PlanJob) and
// against this machine: a job whose estimated peak memory is more than the machine's physical
// memory is refused rather than attempted (docs/run.md). InvalidArgument naming the field.
engine::Result<engine::JobResources> PlanOnThisMachine(const engine::JobSpec& spec,
                                                       const engine::DatasetInfo& data,
                                                       int compute_threads);

}  // namespace trainingd::daemon
