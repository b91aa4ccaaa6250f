#include "trainingd/daemon/datasets/dataset_cache.h"

#include <algorithm>
#include <utility>

#include "trainingd/engine/job/job_runner.h"

namespace trainingd::daemon {

DatasetCache::DatasetCache(std::string data_root, std::string datasets_dir,
                           std::chrono::milliseconds keep_idle)
    : data_root_(std::move(data_root)),
      datasets_dir_(std::move(datasets_dir)),
      keep_idle_(keep_idle) {
  if (keep_idle_.count() > 0) sweeper_ = std::thread([this] { Sweep(); });
}

DatasetCache::~DatasetCache() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  idle_.notify_all();
  if (sweeper_.joinable()) sweeper_.join();
}

engine::Result<std::shared_ptr<const engine::Datasets>> DatasetCache::Load(
    const engine::DatasetSpec& d, engine::Task task) {
  // An upload's name may come back with other bytes: its digest is part of the key.
  const std::string key = d.name + "|" + d.sha256 + "|" + std::to_string(d.validation_size) + "|" +
                          std::to_string(d.max_train_examples) + "|" +
                          std::to_string(d.max_test_examples) + "|" + d.normalize + "|" +
                          std::to_string(d.folds) + "|" + std::to_string(d.fold) + "|" +
                          std::to_string(d.stratified) + "|" + std::to_string(d.split_seed) + "|" +
                          d.weight_column + "|" + engine::TaskName(task);
  // Loading under the lock: two jobs wanting the same dataset load it once.
  std::lock_guard<std::mutex> lock(mu_);
  auto it = loaded_.find(key);
  if (it == loaded_.end()) {
    // Another dataset is wanted: the idle ones go first (admission counted only running jobs').
    FreeIdleLocked(Clock::time_point::max());
    auto data = engine::LoadJobDatasets(d, data_root_, datasets_dir_, task);
    if (!data.ok()) return data.status();
    ++loads_;
    it = loaded_.emplace(key, Entry{*std::move(data)}).first;
  }
  ++it->second.holders;
  // The job's handle: letting go of it releases the entry, which keeps the data.
  return std::shared_ptr<const engine::Datasets>(
      it->second.data.get(), [this, key](const engine::Datasets*) { Release(key); });
}

void DatasetCache::Release(const std::string& key) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = loaded_.find(key);
  if (it == loaded_.end() || --it->second.holders > 0) return;
  if (keep_idle_.count() == 0) {
    loaded_.erase(it);
    return;
  }
  it->second.idle_since = Clock::now();
  lock.unlock();
  idle_.notify_all();
}

DatasetCache::Clock::time_point DatasetCache::FreeIdleLocked(Clock::time_point now) {
  auto due = Clock::time_point::max();
  for (auto i = loaded_.begin(); i != loaded_.end();) {
    if (i->second.holders > 0) {
      ++i;
    } else if (now == Clock::time_point::max() || now - i->second.idle_since >= keep_idle_) {
      i = loaded_.erase(i);
    } else {
      due = std::min(due, i->second.idle_since + keep_idle_);
      ++i;
    }
  }
  return due;
}

void DatasetCache::FreeIdle() {
  std::lock_guard<std::mutex> lock(mu_);
  FreeIdleLocked(Clock::time_point::max());
}

void DatasetCache::Sweep() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    const auto due = FreeIdleLocked(Clock::now());
    if (due == Clock::time_point::max()) {
      idle_.wait(lock);
    } else {
      idle_.wait_until(lock, due);
    }
  }
}

int DatasetCache::resident() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(loaded_.size());
}

int64_t DatasetCache::loads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return loads_;
}

}  // namespace trainingd::daemon
