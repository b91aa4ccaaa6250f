// Fakes for the session and hook tests: a clock the test drives, a logger that keeps its lines,
// a summary sink that keeps its records, and a hook that records every call.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "test_util.h"
#include "trainingd/engine/base/env.h"
#include "trainingd/engine/base/logger.h"
#include "trainingd/engine/io/summary_writer.h"
#include "trainingd/engine/session/session.h"
#include "trainingd/engine/session/session_run_hook.h"

namespace trainingd::engine::testing {

// Time stands still unless the test (or a sleep) moves it.
class FakeEnv final : public Env {
 public:
  double NowSeconds() override { return 1.7e9 + now_; }
  double NowMonotonic() override { return now_; }
  void SleepForSeconds(double s) override {
    sleeps.push_back(s);
    now_ += s;
  }
  void Advance(double s) { now_ += s; }
  std::vector<double> sleeps;

 private:
  double now_ = 1000;
};

class CapturingLogger final : public Logger {
 public:
  void Log(LogSeverity severity, std::string_view message) override {
    std::lock_guard<std::mutex> lock(mu_);
    lines_.push_back(std::string(LogSeverityName(severity)) + ":" + std::string(message));
  }
  std::vector<std::string> lines() {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }
  // Lines containing `needle`.
  std::vector<std::string> Matching(const std::string& needle) {
    std::vector<std::string> out;
    for (const auto& l : lines()) {
      if (l.find(needle) != std::string::npos) out.push_back(l);
    }
    return out;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
};

struct SummaryRecord {
  std::string tag;  // "" for a session log
  int64_t step = 0;
  double value = 0;
  int session_log = 0;  // SessionLogStatus for a session log
  std::string checkpoint_path;
};

class RecordingSink final : public SummarySink {
 public:
  Status AddScalar(std::string_view tag, int64_t step, double value, double) override {
    records.push_back({std::string(tag), step, value, 0, ""});
    return Status::Ok();
  }
  Status AddSessionLog(SessionLogStatus status, std::string_view path, int64_t step,
                       double) override {
    records.push_back({"", step, 0, static_cast<int>(status), std::string(path)});
    return Status::Ok();
  }
  Status AddEvaluation(const EvaluationSummary& e, double) override {
    evaluations.push_back(e);
    return Status::Ok();
  }
  Status Flush() override {
    ++flushes;
    return Status::Ok();
  }
  // Steps at which `tag` was written.
  std::vector<int64_t> StepsOf(const std::string& tag) const {
    std::vector<int64_t> out;
    for (const auto& r : records) {
      if (r.tag == tag) out.push_back(r.step);
    }
    return out;
  }
  std::vector<SummaryRecord> records;
  std::vector<EvaluationSummary> evaluations;  // AddEvaluation's, in order
  int flushes = 0;
};

// Records "name:call" for every call into a shared journal; can fetch and fail on demand.
class RecordingHook : public SessionRunHook {
 public:
  RecordingHook(std::string name, std::vector<std::string>* journal)
      : name_(std::move(name)), journal_(journal) {}
  std::string name() const override { return name_; }
  Status Begin() override { return Note("begin"); }
  Status AfterCreateSession(Session&, Coordinator&) override { return Note("after_create"); }
  Status BeforeRun(RunContext& ctx, RunArgs& request) override {
    request.fetches = fetches;
    request.feeds = feeds;
    if (stop_in_before_run) ctx.RequestStop();
    return Note("before_run");
  }
  Status AfterRun(RunContext& ctx, const RunValues& values) override {
    seen.push_back(values.results);
    if (stop_at_step && ctx.session().global_step() >= stop_at_step) ctx.RequestStop();
    if (fail_after_run_at && ctx.session().global_step() == fail_after_run_at && fail_times > 0) {
      --fail_times;
      static_cast<void>(Note("after_run"));
      return fail_with;
    }
    return Note("after_run");
  }
  Status End(Session& session) override {
    end_step = session.global_step();
    return Note("end");
  }

  std::vector<std::string> fetches;
  Feeds feeds;
  bool stop_in_before_run = false;
  int64_t stop_at_step = 0;
  int64_t fail_after_run_at = 0;
  int fail_times = 0;
  Status fail_with = Status::Unavailable("transient test failure");
  std::vector<std::map<std::string, double>> seen;
  int64_t end_step = -1;

 private:
  Status Note(const char* what) {
    if (journal_) journal_->push_back(name_ + ":" + what);
    return Status::Ok();
  }
  std::string name_;
  std::vector<std::string>* journal_;
};

// The small Fashion-MNIST of test_util.h, shared without copying.
inline std::shared_ptr<const Datasets> SharedSmallData() {
  return std::shared_ptr<const Datasets>(&SmallFashionMnist(), [](const Datasets*) {});
}

// A small model with every kind of state a checkpoint holds (conv, dense, dropout's RNG).
inline ModelSpec SmallCnn() {
  ModelSpec m;
  m.layers = {LayerSpec::Conv2d(4, 5, Padding::kSame, Activation::kRelu),
              LayerSpec::MaxPool2d(2, 2),
              LayerSpec::Flatten(),
              LayerSpec::Dense(16, Activation::kRelu),
              LayerSpec::Dropout(0.4f),
              LayerSpec::Dense(10, Activation::kNone)};
  return m;
}

inline SessionConfig SmallConfig(const ModelSpec& model = SmallCnn()) {
  SessionConfig c;
  c.model = model;
  c.optimizer.type = OptimizerOptions::Type::kAdam;
  c.optimizer.learning_rate = LearningRateSchedule::Constant(1e-3f);
  c.batch_size = 20;
  c.seed = 11;
  return c;
}

// A fresh directory under the test temp dir, removed by the destructor.
class ScopedDir {
 public:
  explicit ScopedDir(const std::string& name) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = (std::filesystem::path(::testing::TempDir()) /
             (name + "_" + std::to_string(::getpid()) + "_" + info->name()))
                .string();
    std::filesystem::remove_all(path_);
  }
  ~ScopedDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace trainingd::engine::testing
