#include "trainingd/engine/session/hooks/profiler_hook.h"

#include <algorithm>
#include <charconv>
#include <filesystem>

#include "session/hooks/hook_util.h"
#include "trainingd/engine/io/checkpoint.h"

namespace trainingd::engine {
namespace {

void AppendJsonString(std::string& out, const std::string& s) {
  out += '"';
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  out += '"';
}

}  // namespace

Result<std::shared_ptr<ProfilerHook>> ProfilerHook::Create(Options options) {
  if (options.output_dir.empty()) {
    return Status::InvalidArgument("output_dir: required by ProfilerHook");
  }
  auto timer = SecondOrStepTimer::Create(options.save_secs, options.save_steps);
  if (!timer.ok()) return timer.status();
  std::shared_ptr<ProfilerHook> hook(
      new ProfilerHook(std::move(options), std::move(timer).value()));
  return hook;
}

Status ProfilerHook::AfterCreateSession(Session& session, Coordinator&) {
  internal::UseSessionEnv(session, env_, timer_);
  std::error_code ec;
  std::filesystem::create_directories(options_.output_dir, ec);
  if (ec) {
    return Status::IoError("ProfilerHook: cannot create " + options_.output_dir + ": " +
                           ec.message());
  }
  if (options_.max_traces > 0) {
    // Timelines of earlier runs in the directory count against the cap too.
    kept_.clear();
    for (const auto& entry : std::filesystem::directory_iterator(options_.output_dir, ec)) {
      const std::string name = entry.path().filename().string();
      int64_t step = 0;
      const char* begin = name.data() + 9;
      const char* end = name.data() + name.size() - 5;
      if (name.size() > 14 && name.rfind("timeline-", 0) == 0 && name.ends_with(".json") &&
          std::from_chars(begin, end, step).ptr == end) {
        kept_.push_back(step);
      }
    }
    std::sort(kept_.begin(), kept_.end());
  }
  return Status::Ok();
}

std::string ProfilerHook::PathFor(int64_t step) const {
  return options_.output_dir + "/timeline-" + std::to_string(step) + ".json";
}

Status ProfilerHook::BeforeRun(RunContext&, RunArgs& request) {
  request_trace_ = next_step_ && timer_.ShouldTriggerForStep(*next_step_);
  request.options.trace = request_trace_;
  return Status::Ok();
}

Status ProfilerHook::AfterRun(RunContext& ctx, const RunValues& values) {
  const int64_t step = ctx.session().global_step();
  if (!next_step_) timer_.UpdateLastTriggeredStep(step - 1);  // the baseline: the stale step
  if (request_trace_ && values.trace) {
    timer_.UpdateLastTriggeredStep(step);
    const std::string path = PathFor(step);
    TRAININGD_RETURN_IF_ERROR(WriteFileAtomically(path, TraceToJson(*values.trace, step)));
    last_file_ = path;
    if (options_.max_traces > 0) {
      if (kept_.empty() || kept_.back() != step) kept_.push_back(step);
      while (kept_.size() > static_cast<size_t>(options_.max_traces)) {
        std::error_code ec;
        std::filesystem::remove(PathFor(kept_.front()), ec);
        kept_.erase(kept_.begin());
      }
    }
    ctx.session().logger().Info("Saved the trace of step " + std::to_string(step) + " to " + path);
  }
  next_step_ = step + 1;
  return Status::Ok();
}

std::string ProfilerHook::TraceToJson(const StepTrace& trace, int64_t global_step) {
  // Chrome trace-event format: complete events ("ph":"X") with microsecond timestamps.
  std::string out =
      "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"global_step\":" + std::to_string(global_step) +
      "},\"traceEvents\":[";
  out += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"trainingd step " +
         std::to_string(global_step) + "\"}},";
  out +=
      "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":"
      "\"training step\"}}";
  for (const TraceEvent& e : trace.events) {
    out += ",{\"name\":";
    AppendJsonString(out, e.name);
    out += ",\"cat\":";
    AppendJsonString(out, e.category);
    char buf[128];
    std::snprintf(buf, sizeof buf, ",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":1,\"tid\":1",
                  e.start_seconds * 1e6, e.duration_seconds * 1e6);
    out += buf;
    out += ",\"args\":{\"phase\":";
    AppendJsonString(out, e.category);
    out += "}}";
  }
  out += "]}\n";
  return out;
}

}  // namespace trainingd::engine
