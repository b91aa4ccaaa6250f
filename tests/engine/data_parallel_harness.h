// The data-parallel tests' harness (data_parallel_test.cpp, data_parallel_tables_test.cpp): a
// job run through RunJob on N ranks as threads (ThreadCommunicator), what its chief's summaries
// and final checkpoint hold, and the bit-for-bit comparisons of two such runs. In a namespace of
// its own: the test files build as one unit.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "session_test_util.h"
#include "test_util.h"
#include "thread_communicator.h"
#include "trainingd/engine/base/parallel.h"
#include "trainingd/engine/io/checkpoint.h"
#include "trainingd/engine/io/checkpoint_manager.h"
#include "trainingd/engine/job/job_runner.h"
#include "trainingd/engine/train/trainer_checkpoint.h"

namespace trainingd::engine::data_parallel {

using testing::RunRanks;
using testing::ScopedDir;

class QuietLogger final : public Logger {
 public:
  void Log(LogSeverity, std::string_view) override {}
};

// Every step's loss and every whole evaluation, as the chief's summaries report them.
class LossSink final : public SummarySink {
 public:
  Status AddScalar(std::string_view tag, int64_t step, double value, double) override {
    std::lock_guard<std::mutex> lock(mu);
    if (tag == "loss") losses[step] = value;
    return Status::Ok();
  }
  Status AddEvaluation(const EvaluationSummary& e, double) override {
    std::lock_guard<std::mutex> lock(mu);
    evaluations.push_back(e);
    return Status::Ok();
  }
  std::mutex mu;
  std::map<int64_t, double> losses;
  std::vector<EvaluationSummary> evaluations;
};

// A small CNN with dropout (the tutorial CNN's layer kinds, narrower), Adam. Its
// first convolution runs as im2col + GEMM, its second (8 input channels) as Winograd.
inline JobSpec SmallCnnJob(int64_t max_steps) {
  JobSpec spec;
  spec.name = "dp";
  spec.model.layers = {
      LayerSpec::Conv2d(8, 5, Padding::kSame, Activation::kRelu),
      LayerSpec::MaxPool2d(2, 2),
      LayerSpec::Conv2d(8, 5, Padding::kSame, Activation::kRelu),
      LayerSpec::MaxPool2d(2, 2),
      LayerSpec::Flatten(),
      LayerSpec::Dense(32, Activation::kRelu),
      LayerSpec::Dropout(0.4f),
      LayerSpec::Dense(10, Activation::kNone),
  };
  spec.optimizer.type = OptimizerOptions::Type::kAdam;
  spec.optimizer.learning_rate = LearningRateSchedule::Constant(1e-3f);
  spec.batch_size = 10;
  spec.max_steps = max_steps;
  spec.seed = 5;
  spec.hooks.summary.trigger.every_steps = 1;
  spec.hooks.checkpoint.trigger.every_steps = 1000;  // the final checkpoint only
  spec.hooks.logging.enabled = false;
  spec.hooks.step_counter.enabled = false;
  spec.hooks.final_eval.enabled = true;  // a sharded, reduced evaluation at the end
  return spec;
}

struct Outcome {
  std::map<int64_t, double> losses;
  std::vector<EvaluationSummary> evaluations;
  std::map<std::string, double> final_values;
  JobResult::Outcome outcome = JobResult::Outcome::kFailed;
  JobResult::StopCause stop_cause = JobResult::StopCause::kNone;
  int64_t global_step = 0;
  std::string reason;
  CheckpointData checkpoint;
};

// Time that moves 10 s per step: after each step (kAfterSteps: the other hooks' BeforeRun and
// AfterRun of a step see the same time) or as a step begins (kDuringSteps: their AfterRun sees
// 10 s more than their BeforeRun).
enum class Clock { kReal, kAfterSteps, kDuringSteps };
class TenSecondStepsHook final : public SessionRunHook {
 public:
  TenSecondStepsHook(testing::FakeEnv* env, Clock clock) : env_(env), clock_(clock) {}
  Status BeforeRun(RunContext&, RunArgs&) override {
    if (clock_ == Clock::kDuringSteps) env_->Advance(10);
    return Status::Ok();
  }
  Status AfterRun(RunContext&, const RunValues&) override {
    if (clock_ == Clock::kAfterSteps) env_->Advance(10);
    return Status::Ok();
  }

 private:
  testing::FakeEnv* env_;
  Clock clock_;
};

// Runs `spec` on `ranks` threads with checkpoint_dir `dir`; `stop_rank` >= 0 raises that rank's
// stop flag once its session exists; `clock` other than kReal gives each rank a clock that moves
// 10 s per step. The data is SmallFashionMnist() unless `data` is given.
inline Outcome RunOnRanks(const JobSpec& spec, int ranks, const std::string& dir,
                          int stop_rank = -1, int threads = 1, Clock clock = Clock::kReal,
                          const Datasets* data = nullptr) {
  auto sink = std::make_shared<LossSink>();
  std::mutex mu;
  std::vector<Result<JobResult>> results(ranks, Status::Internal("not run"));
  RunRanks(ranks, [&](std::shared_ptr<Communicator> comm) {
    SetComputeThreads(threads);
    std::atomic<bool> stop{false};
    JobRunOptions o;
    o.checkpoint_dir = dir;
    o.datasets =
        std::shared_ptr<const Datasets>(data ? data : &testing::SmallFashionMnist(), [](auto*) {});
    o.logger = std::make_shared<QuietLogger>();
    o.communicator = comm;
    o.stop = &stop;
    testing::FakeEnv env;
    if (clock != Clock::kReal) {
      o.env = &env;
      o.extra_hooks = {std::make_shared<TenSecondStepsHook>(&env, clock)};
    }
    if (comm->is_chief()) o.summary_sinks = {sink};
    if (comm->rank() == stop_rank) {
      o.on_session_created = [&stop](MonitoredSession&) { stop = true; };
    }
    auto r = RunJob(spec, o);
    std::lock_guard<std::mutex> lock(mu);
    results[comm->rank()] = std::move(r);
  });
  Outcome out;
  for (int r = 0; r < ranks; ++r) {
    EXPECT_TRUE(results[r].ok()) << "rank " << r << ": " << results[r].status().ToString();
    if (!results[r].ok()) return out;
    EXPECT_EQ(results[r]->global_step, results[0]->global_step) << "rank " << r;
    EXPECT_EQ(results[r]->outcome, results[0]->outcome) << "rank " << r;
  }
  out.losses = sink->losses;
  out.evaluations = sink->evaluations;
  out.final_values = results[0]->final_values;
  out.reason = results[0]->reason;
  out.outcome = results[0]->outcome;
  out.stop_cause = results[0]->stop_cause;
  out.global_step = results[0]->global_step;
  auto manager = CheckpointManager::Create(dir);
  EXPECT_TRUE(manager.ok());
  if (manager.ok()) {
    std::vector<std::string> warnings;
    auto data = (*manager)->RestoreLatest(&warnings);
    EXPECT_TRUE(data.ok()) << data.status().ToString();
    if (data.ok()) out.checkpoint = std::move(data).value();
  }
  return out;
}

// max |a - b| over every variable and optimizer slot, relative to the largest |a|.
inline double RelativeDifference(const CheckpointData& a, const CheckpointData& b) {
  EXPECT_EQ(a.tensors.size(), b.tensors.size());
  double largest = 0, diff = 0;
  for (size_t i = 0; i < std::min(a.tensors.size(), b.tensors.size()); ++i) {
    const Tensor& x = a.tensors[i].second;
    const Tensor& y = b.tensors[i].second;
    EXPECT_EQ(a.tensors[i].first, b.tensors[i].first);
    EXPECT_EQ(x.shape(), y.shape()) << a.tensors[i].first;
    if (x.shape() != y.shape()) return INFINITY;
    for (int64_t k = 0; k < x.size(); ++k) {
      largest = std::max(largest, static_cast<double>(std::fabs(x[k])));
      diff = std::max(diff, static_cast<double>(std::fabs(x[k] - y[k])));
    }
  }
  return diff / largest;
}

inline bool BitIdentical(const CheckpointData& a, const CheckpointData& b) {
  if (a.tensors.size() != b.tensors.size() || a.states != b.states) return false;
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const Tensor& x = a.tensors[i].second;
    const Tensor& y = b.tensors[i].second;
    if (x.shape() != y.shape() || std::memcmp(x.data(), y.data(), 4 * x.size()) != 0) return false;
  }
  return true;
}

inline void ExpectSameLosses(const Outcome& a, const Outcome& b, double tolerance) {
  ASSERT_EQ(a.losses.size(), b.losses.size());
  for (const auto& [step, loss] : a.losses) {
    ASSERT_TRUE(b.losses.count(step)) << step;
    EXPECT_NEAR(b.losses.at(step), loss, tolerance) << "step " << step;
  }
}

// Bit for bit: every variable and optimizer slot, every step's loss to the last bit of the
// float step (the ranks' double loss sums may differ in the last bits of a double).
inline void ExpectIdentical(const Outcome& a, const Outcome& b) {
  EXPECT_EQ(b.outcome, a.outcome);
  EXPECT_EQ(b.global_step, a.global_step);
  EXPECT_TRUE(BitIdentical(a.checkpoint, b.checkpoint))
      << "largest difference " << RelativeDifference(a.checkpoint, b.checkpoint);
  EXPECT_EQ(b.checkpoint.states, a.checkpoint.states);  // input position, dropout streams
  ExpectSameLosses(a, b, 1e-12);
  ASSERT_EQ(b.final_values.size(), a.final_values.size());
  for (const auto& [name, value] : a.final_values)
    EXPECT_NEAR(b.final_values.at(name), value, 1e-12);
}

// The ranks form the kernel gradients of large dense layers from their gathered inputs, each
// its share of the kernel's row tiles (Model::MarkGatheredDenseLayers): here 784 x 200 in 10 tiles
// and 200 x 100 in 2, so 3 and 4 ranks get uneven shares and some get none; a plain ReLU-free
// gathered layer too; the 100 x 17 layer reduced as sums (2 x 100 x 17 < 30 x 117); and the
// narrow 17 x 10 output layer gathered, its 10 columns split unevenly over 3 and 4 ranks.
inline JobSpec GatheredDenseJob(int64_t max_steps) {
  JobSpec spec = SmallCnnJob(max_steps);
  spec.model.layers = {LayerSpec::Flatten(), LayerSpec::Dense(200, Activation::kRelu),
                       LayerSpec::Dense(100, Activation::kNone),
                       LayerSpec::Dense(17, Activation::kRelu),
                       LayerSpec::Dense(10, Activation::kNone)};
  spec.batch_size = 30;
  spec.distributed.reduction_blocks = 12;
  return spec;
}

// Uniform values in [0, 1) and uniform labels: what bit-identity needs, not learnability. 120
// training examples and `test_examples` test examples.
inline Datasets RandomDatasets(const Shape& example, int classes, uint64_t seed,
                               int64_t test_examples = 50) {
  Rng rng(seed);
  const auto split = [&](int64_t n) {
    Split s;
    s.images = Tensor(example.with_batch(n));
    for (int64_t i = 0; i < s.images.size(); ++i) s.images[i] = rng.Uniform();
    for (int64_t i = 0; i < n; ++i) s.labels.push_back(int32_t(rng.UniformInt(uint64_t(classes))));
    return s;
  };
  Datasets d;
  d.train = split(120);
  d.test = split(test_examples);
  d.num_classes = classes;
  return d;
}

// `spec` (6 steps) stopped after 3 steps on 2 ranks, then resumed on 1 to its end: the final
// checkpoint and the losses of steps 4-6 are the straight run `one`'s, bit for bit.
inline void ExpectStopOnTwoRanksAndResumeOnOneIsStraight(const JobSpec& spec, const Datasets& table,
                                                         const Outcome& one,
                                                         const std::string& dir) {
  ScopedDir dr(dir);
  JobSpec first = spec;
  first.max_steps = 3;
  ASSERT_EQ(RunOnRanks(first, 2, dr.path(), -1, 1, Clock::kReal, &table).global_step, 3);
  const Outcome resumed = RunOnRanks(spec, 1, dr.path(), -1, 1, Clock::kReal, &table);
  EXPECT_EQ(resumed.global_step, 6);
  EXPECT_TRUE(BitIdentical(one.checkpoint, resumed.checkpoint))
      << "largest difference " << RelativeDifference(one.checkpoint, resumed.checkpoint);
  for (int64_t step = 4; step <= 6; ++step) {
    EXPECT_EQ(resumed.losses.at(step), one.losses.at(step)) << "step " << step;
  }
}

inline bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

inline void ExpectSameBits(const std::vector<double>& a, const std::vector<double>& b,
                           const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(SameBits(a[i], b[i])) << what << "[" << i << "]";
}

}  // namespace trainingd::engine::data_parallel
