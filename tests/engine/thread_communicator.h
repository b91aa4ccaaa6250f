// ThreadCommunicator: N ranks as threads of one test process, for data-parallel tests without
// MPI. Sums are formed in rank order, so results are deterministic like MPI's for fixed sizes.
#pragma once

#include <algorithm>
#include <barrier>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "trainingd/engine/dist/communicator.h"

namespace trainingd::engine::testing {

class ThreadGroup {
 public:
  explicit ThreadGroup(int size) : size_(size), barrier_(size), slots_(size) {}
  int size() const { return size_; }

  template <typename T, typename Op = std::plus<T>>
  void Allreduce(int rank, std::span<T> data, Op op = {}) {
    slots_[rank] = data.data();
    barrier_.arrive_and_wait();
    std::vector<T> sum(data.size());
    for (size_t i = 0; i < data.size(); ++i) {
      T s = static_cast<const T*>(slots_[0])[i];
      for (int r = 1; r < size_; ++r) s = op(s, static_cast<const T*>(slots_[r])[i]);
      sum[i] = s;
    }
    barrier_.arrive_and_wait();  // everyone has read every rank's data
    std::copy(sum.begin(), sum.end(), data.begin());
  }
  // The sum of every rank's `data` in this rank's part [bounds[rank], bounds[rank + 1]); the
  // rest is overwritten with a value no sum here reaches, so a reader of it shows.
  void ReduceScatterSum(int rank, std::span<int64_t> data, std::span<const int64_t> bounds) {
    Allreduce(rank, data);
    const auto mine = data.begin() + bounds[static_cast<size_t>(rank)];
    std::fill(data.begin(), mine, kNotMine);
    std::fill(data.begin() + bounds[static_cast<size_t>(rank) + 1], data.end(), kNotMine);
  }
  static constexpr int64_t kNotMine = INT64_MIN / 3;
  // Every rank's part [bounds[r], bounds[r + 1]) of its own `data` into every rank's `data`.
  void AllgatherParts(int rank, std::span<float> data, std::span<const int64_t> bounds) {
    slots_[rank] = data.data();
    barrier_.arrive_and_wait();
    for (int r = 0; r < size_; ++r) {
      if (r == rank) continue;
      const int64_t begin = bounds[static_cast<size_t>(r)];
      const int64_t end = bounds[static_cast<size_t>(r) + 1];
      std::copy_n(static_cast<const float*>(slots_[r]) + begin, end - begin, data.data() + begin);
    }
    barrier_.arrive_and_wait();
  }
  void Broadcast(int rank, std::span<std::byte> data, int root) {
    if (rank == root) slots_[root] = data.data();
    barrier_.arrive_and_wait();
    if (rank != root) std::memcpy(data.data(), slots_[root], data.size());
    barrier_.arrive_and_wait();
  }
  void Barrier() { barrier_.arrive_and_wait(); }

 private:
  int size_;
  std::barrier<> barrier_;
  std::vector<const void*> slots_;
};

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<ThreadGroup> group, int rank)
      : group_(std::move(group)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  Status AllreduceSum(std::span<float> data) override {
    group_->Allreduce(rank_, data);
    return Status::Ok();
  }
  Status AllreduceSum(std::span<double> data) override {
    group_->Allreduce(rank_, data);
    return Status::Ok();
  }
  Status AllreduceSum(std::span<int64_t> data) override {
    group_->Allreduce(rank_, data);
    return Status::Ok();
  }
  Status ReduceScatterSum(std::span<int64_t> data, std::span<const int64_t> bounds) override {
    group_->ReduceScatterSum(rank_, data, bounds);
    return Status::Ok();
  }
  Status AllgatherParts(std::span<float> data, std::span<const int64_t> bounds) override {
    group_->AllgatherParts(rank_, data, bounds);
    return Status::Ok();
  }
  Status AllreduceMax(std::span<float> data) override {
    group_->Allreduce(rank_, data, [](float a, float b) { return std::max(a, b); });
    return Status::Ok();
  }
  Status Broadcast(std::span<std::byte> data, int root) override {
    group_->Broadcast(rank_, data, root);
    return Status::Ok();
  }
  Status Barrier() override {
    group_->Barrier();
    return Status::Ok();
  }

 private:
  std::shared_ptr<ThreadGroup> group_;
  int rank_;
};

// Runs body(communicator) on `size` threads, one per rank, each with one compute thread, and
// waits for all of them.
inline void RunRanks(int size, const std::function<void(std::shared_ptr<Communicator>)>& body) {
  auto group = std::make_shared<ThreadGroup>(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] { body(std::make_shared<ThreadCommunicator>(group, r)); });
  }
  for (auto& t : threads) t.join();
}

}  // namespace trainingd::engine::testing
