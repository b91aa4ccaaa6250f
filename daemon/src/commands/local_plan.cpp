#include "commands/local_plan.h"

#include "jobs/machine.h"

namespace trainingd::daemon {

namespace eng = trainingd::engine;

eng::Result<eng::JobResources> PlanOnThisMachine(const eng::JobSpec& spec,
                                                 const eng::DatasetInfo& data,
                                                 int compute_threads) {
  eng::JobRunLimits limits;
  limits.compute_threads = compute_threads;
  auto resources = eng::PlanJob(spec, data, limits);
  if (!resources.ok()) return resources.status();
  eng::JobBudget budget;
  budget.memory_bytes = PhysicalMemoryBytes();
  TRAININGD_RETURN_IF_ERROR(eng::CheckJobBudget(spec, *resources, budget));
  return resources;
}

}  // namespace trainingd::daemon
