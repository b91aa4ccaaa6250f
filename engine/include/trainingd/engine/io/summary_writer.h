// SummaryWriter: where scalar summaries go -- event files, and whatever else is plugged in.
//
// A SummarySink receives scalars and session-log events. The engine ships EventFileSink
// (TensorBoard event files); the daemon adds its own (the database, the live dashboard).
// SummaryWriter fans every call out to all its sinks and stamps the wall time. It is what the
// hooks write through, and what MonitoredSession::summary_writer() hands user code (TF's writer
// was out of reach, docs/hooks.md).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "trainingd/engine/base/env.h"
#include "trainingd/engine/base/status.h"
#include "trainingd/engine/io/event_file_writer.h"
#include "trainingd/engine/train/metrics.h"

namespace trainingd::engine {

class SummarySink {
 public:
  virtual ~SummarySink() = default;
  virtual Status AddScalar(std::string_view tag, int64_t step, double value, double wall_time) = 0;
  virtual Status AddSessionLog(SessionLogStatus /*status*/, std::string_view /*checkpoint_path*/,
                               int64_t /*step*/, double /*wall_time*/) {
    return Status::Ok();
  }
  // A split's whole evaluation: its confusion matrix and per-class values, beside the scalars
  // the same evaluation recorded. Event files keep only the scalars (no default action).
  virtual Status AddEvaluation(const EvaluationSummary& /*evaluation*/, double /*wall_time*/) {
    return Status::Ok();
  }
  // Makes everything written so far durable/visible.
  virtual Status Flush() { return Status::Ok(); }
};

// An event file in `dir`, flushed (and fsynced) by Flush() and whenever `flush_secs` passed since
// the last flush when a record is added (TF's FileWriter: flush_secs = 120).
class EventFileSink final : public SummarySink {
 public:
  struct Options {
    double flush_secs = 120;
    std::string filename_suffix;
    Env* env = nullptr;  // null = Env::Default()
  };
  static Result<std::unique_ptr<EventFileSink>> Create(const std::string& dir,
                                                       const Options& options);

  Status AddScalar(std::string_view tag, int64_t step, double value, double wall_time) override;
  Status AddSessionLog(SessionLogStatus status, std::string_view checkpoint_path, int64_t step,
                       double wall_time) override;
  Status Flush() override;
  const std::string& path() const { return writer_->path(); }

 private:
  EventFileSink(std::unique_ptr<EventFileWriter> writer, const Options& options);
  Status MaybeFlush();

  std::unique_ptr<EventFileWriter> writer_;
  Options options_;
  double last_flush_ = 0;
};

// Thread-safe fan-out to sinks.
class SummaryWriter {
 public:
  explicit SummaryWriter(Env* env = nullptr) : env_(env ? env : Env::Default()) {}

  void AddSink(std::shared_ptr<SummarySink> sink);
  // Each call reaches every sink, even when one fails; the first error is returned.
  Status AddScalar(std::string_view tag, int64_t step, double value);
  Status AddSessionLog(SessionLogStatus status, std::string_view checkpoint_path, int64_t step);
  Status AddEvaluation(const EvaluationSummary& evaluation);
  Status Flush();

 private:
  Env* env_;
  std::mutex mu_;
  std::vector<std::shared_ptr<SummarySink>> sinks_;
};

}  // namespace trainingd::engine
