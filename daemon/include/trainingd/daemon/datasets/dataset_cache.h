// DatasetCache: the datasets of the jobs that run in this process, by name under one data root.
// Load() loads a dataset whole and shares it between the jobs that use it at the same time (it is
// freed when the last of them lets go). Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "trainingd/engine/base/status.h"
#include "trainingd/engine/data/dataset.h"
#include "trainingd/engine/job/job_spec.h"

namespace trainingd::daemon {

class DatasetCache {
 public:
  DatasetCache(std::string data_root, std::string datasets_dir)
      : data_root_(std::move(data_root)), datasets_dir_(std::move(datasets_dir)) {}

  // The loaded dataset; one copy per (name, split options) while anyone holds it.
  engine::Result<std::shared_ptr<const engine::Datasets>> Load(const engine::DatasetSpec& dataset);

  const std::string& data_root() const { return data_root_; }

 private:
  const std::string data_root_;
  const std::string datasets_dir_;
  std::mutex mu_;
  std::map<std::string, std::weak_ptr<const engine::Datasets>> loaded_;
};

}  // namespace trainingd::daemon
