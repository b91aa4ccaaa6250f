#include "trainingd/engine/io/summary_writer.h"

namespace trainingd::engine {

Result<std::unique_ptr<EventFileSink>> EventFileSink::Create(const std::string& dir,
                                                             const Options& options) {
  Options o = options;
  if (!o.env) o.env = Env::Default();
  auto writer = EventFileWriter::Create(
      dir, {.filename_suffix = o.filename_suffix, .start_wall_time = o.env->NowSeconds()});
  if (!writer.ok()) return writer.status();
  return std::unique_ptr<EventFileSink>(new EventFileSink(std::move(writer).value(), o));
}

EventFileSink::EventFileSink(std::unique_ptr<EventFileWriter> writer, const Options& options)
    : writer_(std::move(writer)), options_(options), last_flush_(options.env->NowMonotonic()) {}

Status EventFileSink::AddScalar(std::string_view tag, int64_t step, double value,
                                double wall_time) {
  TRAININGD_RETURN_IF_ERROR(writer_->AddScalar(tag, step, static_cast<float>(value), wall_time));
  return MaybeFlush();
}

Status EventFileSink::AddSessionLog(SessionLogStatus status, std::string_view checkpoint_path,
                                    int64_t step, double wall_time) {
  TRAININGD_RETURN_IF_ERROR(writer_->AddSessionLog(status, checkpoint_path, step, wall_time));
  return MaybeFlush();
}

Status EventFileSink::Flush() {
  last_flush_ = options_.env->NowMonotonic();
  return writer_->Flush();
}

Status EventFileSink::MaybeFlush() {
  if (options_.env->NowMonotonic() - last_flush_ >= options_.flush_secs) return Flush();
  return Status::Ok();
}

void SummaryWriter::AddSink(std::shared_ptr<SummarySink> sink) {
  std::lock_guard<std::mutex> lock(mu_);
  sinks_.push_back(std::move(sink));
}

namespace {
template <typename F>
Status ForEach(std::vector<std::shared_ptr<SummarySink>>& sinks, F f) {
  Status first;
  for (auto& s : sinks) {
    Status st = f(*s);
    if (!st.ok() && first.ok()) first = std::move(st);
  }
  return first;
}
}  // namespace

Status SummaryWriter::AddScalar(std::string_view tag, int64_t step, double value) {
  const double now = env_->NowSeconds();
  std::lock_guard<std::mutex> lock(mu_);
  return ForEach(sinks_, [&](SummarySink& s) { return s.AddScalar(tag, step, value, now); });
}

Status SummaryWriter::AddSessionLog(SessionLogStatus status, std::string_view checkpoint_path,
                                    int64_t step) {
  const double now = env_->NowSeconds();
  std::lock_guard<std::mutex> lock(mu_);
  return ForEach(
      sinks_, [&](SummarySink& s) { return s.AddSessionLog(status, checkpoint_path, step, now); });
}

Status SummaryWriter::AddEvaluation(const EvaluationSummary& evaluation) {
  const double now = env_->NowSeconds();
  std::lock_guard<std::mutex> lock(mu_);
  return ForEach(sinks_, [&](SummarySink& s) { return s.AddEvaluation(evaluation, now); });
}

Status SummaryWriter::Flush() {
  std::lock_guard<std::mutex> lock(mu_);
  return ForEach(sinks_, [](SummarySink& s) { return s.Flush(); });
}

}  // namespace trainingd::engine
