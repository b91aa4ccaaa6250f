#include "trainingd/daemon/executors/local_executor.h"

#include <malloc.h>

#include <new>
#include <utility>
#include <vector>

#include "trainingd/api/model_json.h"
#include "trainingd/engine/base/parallel.h"

namespace trainingd::daemon {
namespace eng = trainingd::engine;
namespace {

// The session's scalars and evaluations, as events.
class ScalarEvents final : public eng::SummarySink {
 public:
  ScalarEvents(RunListener& listener, std::string job_id)
      : listener_(listener), job_id_(std::move(job_id)) {}
  eng::Status AddScalar(std::string_view tag, int64_t step, double value,
                        double wall_time) override {
    listener_.OnRunEvent(job_id_, ScalarRecorded{std::string(tag), step, value, wall_time});
    return eng::Status::Ok();
  }
  eng::Status AddEvaluation(const eng::EvaluationSummary& evaluation, double wall_time) override {
    listener_.OnRunEvent(job_id_, eng::EvaluationRecorded{evaluation, wall_time});
    return eng::Status::Ok();
  }

 private:
  RunListener& listener_;
  const std::string job_id_;
};

// The session's console, as events.
class LogEvents final : public eng::Logger {
 public:
  LogEvents(RunListener& listener, std::string job_id)
      : listener_(listener), job_id_(std::move(job_id)) {}
  void Log(eng::LogSeverity severity, std::string_view message) override {
    // The session logs from its thread, RunJob's caller from the same one: one at a time, but
    // the Logger contract allows any thread, and the listener wants them in order.
    std::lock_guard<std::mutex> lock(mu_);
    listener_.OnRunEvent(job_id_, LogWritten{severity, std::string(message)});
  }

 private:
  std::mutex mu_;
  RunListener& listener_;
  const std::string job_id_;
};

}  // namespace

LocalExecutor::LocalExecutor(LocalExecutorOptions options)
    : options_(std::move(options)),
      datasets_(options_.data_root, options_.datasets_dir, options_.keep_datasets_idle) {}

LocalExecutor::~LocalExecutor() { Shutdown(); }

eng::Status LocalExecutor::Start(RunRequest request, RunListener& listener) {
  const std::string id = request.job_id;
  return runs_.Start(id, options_.slots, [this, request = std::move(request), &listener](Run& r) {
    Body(request, listener, r);
  });
}

void LocalExecutor::Body(const RunRequest& request, RunListener& listener, Run& run) {
  const int cpus = request.spec.resources.cpus_per_worker;
  eng::SetComputeThreads(cpus > 0 ? cpus : options_.threads_per_job);
  eng::Result<eng::JobResult> result = eng::Status::Internal("not run");
  // The run's exception boundary: whatever it throws ends the run, never the process.
  try {
    auto data = datasets_.Load(request.spec.dataset, request.spec.task);
    if (!data.ok()) {
      result = data.status();
    } else {
      eng::JobRunOptions o;
      o.checkpoint_dir = request.job_dir;
      o.data_root = options_.data_root;
      o.datasets_dir = options_.datasets_dir;
      o.datasets = std::move(data).value();
      o.stop = &run.stop;
      // What export and serving need besides the weights, beside the checkpoints
      // (docs/models.md).
      o.on_model_input = [dir = request.job_dir](const eng::ModelInput& input) {
        return api::WriteModelJson(dir, input);
      };
      o.summary_sinks = {std::make_shared<ScalarEvents>(listener, request.job_id)};
      o.env = options_.env;
      o.logger = std::make_shared<LogEvents>(listener, request.job_id);
      o.limits = request.limits;
      o.on_session_created = [&](eng::MonitoredSession& ms) {
        listener.OnRunEvent(request.job_id, SessionCreated{ms.global_step()});
      };
      result = eng::RunJob(request.spec, o);
    }
  } catch (const std::bad_alloc&) {
    result = eng::Status::ResourceExhausted(
        "out of memory: an allocation failed while the job ran (its estimate was within the "
        "per-job memory budget; other processes or jobs may hold the rest)");
  } catch (const std::exception& e) {
    result = eng::Status::Internal(std::string("the job threw an exception: ") + e.what());
  } catch (...) {
    result = eng::Status::Internal("the job threw an unknown exception");
  }
  // The run's memory goes back to the system now, not when malloc next trims an arena: a daemon
  // that runs jobs for months would otherwise keep the high-water mark of every thread's arena
  // (bench/soak.py).
  malloc_trim(0);
  // The slot is free once the manager hears of the end: mark it first, so a Start the listener
  // makes for the next job finds room.
  runs_.Finished(run);
  listener.OnRunEvent(request.job_id, RunEnded{std::move(result)});
}

void LocalExecutor::RequestStop(const std::string& job_id) {
  runs_.With(job_id, [](Run& run) { run.stop = true; });
}

void LocalExecutor::Shutdown() {
  runs_.Shutdown([](Run& run) { run.stop = true; });
}

}  // namespace trainingd::daemon
