#include "trainingd/daemon/datasets/dataset_cache.h"

#include "trainingd/engine/job/job_runner.h"

namespace trainingd::daemon {

engine::Result<std::shared_ptr<const engine::Datasets>> DatasetCache::Load(
    const engine::DatasetSpec& d) {
  // An upload's name may come back with other bytes: its digest is part of the key.
  const std::string key = d.name + "|" + d.sha256 + "|" + std::to_string(d.validation_size) + "|" +
                          std::to_string(d.max_train_examples) + "|" +
                          std::to_string(d.max_test_examples);
  // Loading under the lock: two jobs wanting the same dataset load it once.
  std::lock_guard<std::mutex> lock(mu_);
  if (auto cached = loaded_[key].lock()) return cached;
  auto loaded = engine::LoadJobDatasets(d, data_root_, datasets_dir_);
  if (!loaded.ok()) return loaded.status();
  loaded_[key] = *loaded;
  return *loaded;
}

}  // namespace trainingd::daemon
