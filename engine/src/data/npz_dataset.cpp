#include "trainingd/engine/data/npz_dataset.h"

namespace trainingd::engine {

// Placeholder until the NPZ reader lands: every call says so.
Result<DatasetInfo> ProbeNpz(const DatasetSource& source, const DatasetOptions&, ProbeDepth) {
  return Status::FailedPrecondition(source.path + ": npz datasets are not readable yet");
}
Result<Datasets> LoadNpz(const DatasetSource& source, const DatasetOptions&) {
  return Status::FailedPrecondition(source.path + ": npz datasets are not readable yet");
}

}  // namespace trainingd::engine
