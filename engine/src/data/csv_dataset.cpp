#include "trainingd/engine/data/csv_dataset.h"

namespace trainingd::engine {

// Placeholder until the CSV reader lands: every call says so.
Result<DatasetInfo> ProbeCsv(const DatasetSource& source, const DatasetOptions&, ProbeDepth) {
  return Status::FailedPrecondition(source.path + ": csv datasets are not readable yet");
}
Result<Datasets> LoadCsv(const DatasetSource& source, const DatasetOptions&) {
  return Status::FailedPrecondition(source.path + ": csv datasets are not readable yet");
}

}  // namespace trainingd::engine
