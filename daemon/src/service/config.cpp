#include "trainingd/daemon/service/config.h"

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <tuple>
#include <type_traits>

#include "trainingd/api/browser_policy.h"
#include "trainingd/api/strict_json.h"
#include "trainingd/daemon/jobs/job_manager.h"

namespace trainingd::daemon {
namespace eng = trainingd::engine;
namespace sj = api::strict_json;
using json = sj::json;

namespace {

// "<field>: <what>"; just <what> when the field is named by the caller (a flag's parser).
eng::Status Bad(const std::string& field, const std::string& what) {
  return eng::Status::InvalidArgument(field.empty() ? what : field + ": " + what);
}

eng::Status ParseInt(const std::string& text, const std::string& field, int lo, int hi, int& out) {
  int v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || v < lo || v > hi) {
    return Bad(field, "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                          "], got '" + text + "'");
  }
  out = v;
  return eng::Status::Ok();
}

eng::Status ReadToken(ServeConfig& c) {
  if (!c.token_file.empty()) {
    std::ifstream in(c.token_file);
    if (!in) return Bad("token_file", "cannot read " + c.token_file);
    std::getline(in, c.token);
    while (!c.token.empty() && (c.token.back() == '\r' || c.token.back() == ' ')) {
      c.token.pop_back();
    }
    if (c.token.size() < 16) return Bad("token_file", "the token must be at least 16 characters");
  } else if (const char* env = std::getenv("TRAININGD_TOKEN"); env && *env) {
    c.token = env;
    if (c.token.size() < 16) return Bad("TRAININGD_TOKEN", "must be at least 16 characters");
  }
  return eng::Status::Ok();
}

constexpr int kMaxConnections = 1000000;

// A JSON array of strings, each accepted by `valid` (else an error naming its index).
template <typename Valid>
eng::Status StringList(const json& value, const std::string& field, std::vector<std::string>& out,
                       Valid valid, const std::string& what) {
  std::vector<std::string> list;
  TRAININGD_RETURN_IF_ERROR(sj::Read(value, field, &list));
  for (size_t i = 0; i < list.size(); ++i) {
    if (!valid(list[i])) {
      return sj::Bad(sj::Index(field, i), "must be " + what + ", got " + sj::Quote(list[i]));
    }
  }
  out = std::move(list);
  return eng::Status::Ok();
}

// The "slurm" section over `o`; errors "slurm.<key>: <what>".
eng::Status ApplySlurm(const json& v, SlurmOptions& o) {
  constexpr const char* kPath = "slurm";
  TRAININGD_RETURN_IF_ERROR(sj::CheckObject(
      v, kPath,
      {"partition", "account", "job_root", "sbatch_options", "trainingd_path", "data_root",
       "poll_secs", "max_jobs", "time_limit_minutes", "cpus_per_task", "stop_grace_secs"},
      "key"));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, kPath, "partition", &o.partition));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, kPath, "account", &o.account));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, kPath, "job_root", &o.job_root));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, kPath, "sbatch_options", &o.sbatch_options));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, kPath, "trainingd_path", &o.trainingd_path));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, kPath, "data_root", &o.data_root));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, kPath, "poll_secs", &o.poll_secs));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, kPath, "stop_grace_secs", &o.stop_grace_secs));
  for (const auto& [key, lo, hi, out] :
       {std::tuple{"max_jobs", 1, kMaxConcurrentJobs, &o.max_jobs},
        std::tuple{"time_limit_minutes", 0, 1000000, &o.time_limit_minutes},
        std::tuple{"cpus_per_task", 1, 256, &o.cpus_per_task}}) {
    if (const auto it = v.find(key); it != v.end()) {
      TRAININGD_RETURN_IF_ERROR(sj::ReadInt(*it, sj::Child(kPath, key), lo, hi, out));
    }
  }
  if (!(o.poll_secs >= 0.05 && o.poll_secs <= 3600)) {
    return sj::Bad("slurm.poll_secs", "must be in [0.05, 3600]");
  }
  if (!(o.stop_grace_secs >= 0 && o.stop_grace_secs <= 86400)) {
    return sj::Bad("slurm.stop_grace_secs", "must be in [0, 86400]");
  }
  for (const auto& [key, value] :
       {std::pair{"job_root", &o.job_root}, std::pair{"trainingd_path", &o.trainingd_path},
        std::pair{"data_root", &o.data_root}}) {
    if (!value->empty() && value->front() != '/') {
      return sj::Bad(sj::Child(kPath, key), "must be an absolute path (the nodes use it)");
    }
  }
  for (size_t i = 0; i < o.sbatch_options.size(); ++i) {
    if (o.sbatch_options[i].rfind("-", 0) != 0) {
      return sj::Bad(sj::Index("slurm.sbatch_options", i),
                     "must be an option (start with -), got " + sj::Quote(o.sbatch_options[i]));
    }
  }
  return eng::Status::Ok();
}

// A number key of `obj` in [lo, hi], when present; errors name "<path>.<key>".
eng::Status Number(const json& obj, const std::string& path, const char* key, double lo, double hi,
                   double* out) {
  const auto it = obj.find(key);
  if (it == obj.end()) return eng::Status::Ok();
  double v = 0;
  TRAININGD_RETURN_IF_ERROR(sj::Read(*it, sj::Child(path, key), &v));
  if (!(v >= lo && v <= hi)) {
    return sj::Bad(sj::Child(path, key), "must be in [" + sj::Got(json(lo)) + ", " +
                                             sj::Got(json(hi)) + "], got " + sj::Got(*it));
  }
  *out = v;
  return eng::Status::Ok();
}

// One user's quota (an object under "quotas"); a limit of zero or less is refused: a user who
// may run nothing is a disabled user (docs/operations.md#team-use).
eng::Status ReadQuota(const json& v, const std::string& path, Quota& q) {
  TRAININGD_RETURN_IF_ERROR(
      sj::CheckObject(v, path, {"running_slots", "queued_jobs", "max_priority"}, "key"));
  for (const auto& [key, out] :
       {std::pair{"running_slots", &q.running_slots}, std::pair{"queued_jobs", &q.queued_jobs}}) {
    if (const auto it = v.find(key); it != v.end()) {
      int64_t n = 0;
      TRAININGD_RETURN_IF_ERROR(sj::Read(*it, sj::Child(path, key), &n));
      if (n < 1) {
        return sj::Bad(sj::Child(path, key),
                       "must be at least 1, got " + std::to_string(n) +
                           " (leave the key out for no limit; disable a user to stop its jobs)");
      }
      *out = n;
    }
  }
  if (const auto it = v.find("max_priority"); it != v.end()) {
    int64_t n = 0;
    TRAININGD_RETURN_IF_ERROR(sj::ReadInt(*it, sj::Child(path, "max_priority"),
                                          eng::kMinJobPriority, eng::kMaxJobPriority, &n));
    q.max_priority = n;
  }
  return eng::Status::Ok();
}

// "fair_share", "quotas" and "preemption" over `o`.
eng::Status ApplyScheduler(const json& doc, SchedulerOptions& o) {
  if (const auto it = doc.find("fair_share"); it != doc.end()) {
    const std::string path = "fair_share";
    TRAININGD_RETURN_IF_ERROR(
        sj::CheckObject(*it, path, {"half_life_secs", "estimate_secs", "weights"}, "key"));
    TRAININGD_RETURN_IF_ERROR(Number(*it, path, "half_life_secs", 1, 1e9, &o.half_life_secs));
    TRAININGD_RETURN_IF_ERROR(
        Number(*it, path, "estimate_secs", 0.001, 1e9, &o.default_estimate_secs));
    if (const auto w = it->find("weights"); w != it->end()) {
      const std::string wpath = sj::Child(path, "weights");
      if (!w->is_object()) return sj::Bad(wpath, "must be an object of user: weight");
      for (const auto& [user, value] : w->items()) {
        double weight = 0;
        TRAININGD_RETURN_IF_ERROR(Number(*w, wpath, user.c_str(), 0.001, 1e6, &weight));
        o.weights[user] = weight;
      }
    }
  }
  if (const auto it = doc.find("quotas"); it != doc.end()) {
    TRAININGD_RETURN_IF_ERROR(sj::CheckObject(*it, "quotas", {"default", "users"}, "key"));
    if (const auto d = it->find("default"); d != it->end()) {
      TRAININGD_RETURN_IF_ERROR(ReadQuota(*d, "quotas.default", o.default_quota));
    }
    if (const auto u = it->find("users"); u != it->end()) {
      if (!u->is_object()) return sj::Bad("quotas.users", "must be an object of user: quota");
      for (const auto& [user, quota] : u->items()) {
        TRAININGD_RETURN_IF_ERROR(ReadQuota(quota, "quotas.users." + user, o.quotas[user]));
      }
    }
  }
  if (const auto it = doc.find("preemption"); it != doc.end()) {
    TRAININGD_RETURN_IF_ERROR(
        sj::CheckObject(*it, "preemption", {"enabled", "min_run_secs"}, "key"));
    TRAININGD_RETURN_IF_ERROR(sj::Field(*it, "preemption", "enabled", &o.preemption));
    TRAININGD_RETURN_IF_ERROR(Number(*it, "preemption", "min_run_secs", 0, 1e9, &o.min_run_secs));
  }
  return eng::Status::Ok();
}

// The config document's keys over `c`; errors "<key>: <what>".
eng::Status ApplyConfig(const json& doc, ServeConfig& c) {
  TRAININGD_RETURN_IF_ERROR(sj::CheckObject(doc, "",
                                            {"listen",
                                             "data_dir",
                                             "data_root",
                                             "datasets_dir",
                                             "max_dataset_bytes",
                                             "web_dir",
                                             "token_file",
                                             "max_concurrent_jobs",
                                             "threads_per_job",
                                             "http_threads",
                                             "http_handler_threads",
                                             "allowed_hosts",
                                             "allowed_origins",
                                             "max_connections",
                                             "max_job_memory_bytes",
                                             "max_job_disk_bytes",
                                             "max_checkpoints_per_job",
                                             "max_profiler_traces_per_job",
                                             "max_log_bytes_per_job",
                                             "max_crash_restarts",
                                             "audit_keep",
                                             "mpi",
                                             "executor",
                                             "slurm",
                                             "serving",
                                             "fair_share",
                                             "quotas",
                                             "preemption"},
                                            "key"));
  // An integer key in [lo, hi], when present.
  const auto integer = [&doc](const char* key, int64_t lo, int64_t hi, auto* out) {
    const auto it = doc.find(key);
    if (it == doc.end()) return eng::Status::Ok();
    int64_t v = 0;
    TRAININGD_RETURN_IF_ERROR(sj::ReadInt(*it, key, lo, hi, &v));
    *out = static_cast<std::remove_pointer_t<decltype(out)>>(v);
    return eng::Status::Ok();
  };
  constexpr int64_t kBytes = std::numeric_limits<int64_t>::max();
  if (const auto it = doc.find("listen"); it != doc.end()) {
    std::string listen;
    TRAININGD_RETURN_IF_ERROR(sj::Read(*it, "listen", &listen));
    TRAININGD_RETURN_IF_ERROR(ParseListen(listen, "listen", c));
  }
  TRAININGD_RETURN_IF_ERROR(sj::Field(doc, "", "data_dir", &c.data_dir));
  TRAININGD_RETURN_IF_ERROR(sj::Field(doc, "", "data_root", &c.data_root));
  TRAININGD_RETURN_IF_ERROR(sj::Field(doc, "", "datasets_dir", &c.datasets_dir));
  TRAININGD_RETURN_IF_ERROR(sj::Field(doc, "", "web_dir", &c.web_dir));
  TRAININGD_RETURN_IF_ERROR(sj::Field(doc, "", "token_file", &c.token_file));
  TRAININGD_RETURN_IF_ERROR(
      integer("max_concurrent_jobs", 1, kMaxConcurrentJobs, &c.max_concurrent_jobs));
  TRAININGD_RETURN_IF_ERROR(integer("threads_per_job", 0, 256, &c.threads_per_job));
  TRAININGD_RETURN_IF_ERROR(integer("http_threads", 1, 64, &c.http_threads));
  TRAININGD_RETURN_IF_ERROR(integer("http_handler_threads", 1, 64, &c.http_handler_threads));
  if (const auto it = doc.find("allowed_hosts"); it != doc.end()) {
    TRAININGD_RETURN_IF_ERROR(StringList(
        *it, "allowed_hosts", c.allowed_hosts,
        [](const std::string& s) { return api::ParseHostAndPort(s).has_value(); },
        "a host name or IP address with an optional :port"));
  }
  if (const auto it = doc.find("allowed_origins"); it != doc.end()) {
    TRAININGD_RETURN_IF_ERROR(StringList(
        *it, "allowed_origins", c.allowed_origins,
        [](const std::string& s) { return api::NormalizeOrigin(s).has_value(); },
        "an origin http://host[:port] or https://host[:port], without a path"));
  }
  TRAININGD_RETURN_IF_ERROR(integer("max_connections", 1, kMaxConnections, &c.max_connections));
  TRAININGD_RETURN_IF_ERROR(integer("max_dataset_bytes", 1, kBytes, &c.max_dataset_bytes));
  TRAININGD_RETURN_IF_ERROR(
      integer("max_job_memory_bytes", -1, kBytes, &c.limits.max_job_memory_bytes));
  TRAININGD_RETURN_IF_ERROR(
      integer("max_job_disk_bytes", -1, kBytes, &c.limits.max_job_disk_bytes));
  TRAININGD_RETURN_IF_ERROR(
      integer("max_checkpoints_per_job", 1, 100000, &c.limits.max_checkpoints_per_job));
  TRAININGD_RETURN_IF_ERROR(
      integer("max_profiler_traces_per_job", 1, 100000, &c.limits.max_profiler_traces_per_job));
  TRAININGD_RETURN_IF_ERROR(
      integer("max_log_bytes_per_job", 4096, kBytes, &c.limits.max_log_bytes_per_job));
  TRAININGD_RETURN_IF_ERROR(integer("max_crash_restarts", 0, 1000, &c.limits.max_crash_restarts));
  TRAININGD_RETURN_IF_ERROR(integer("audit_keep", 1000, int64_t{1} << 32, &c.audit_keep));
  TRAININGD_RETURN_IF_ERROR(ApplyScheduler(doc, c.scheduler));
  if (const auto it = doc.find("serving"); it != doc.end()) {
    TRAININGD_RETURN_IF_ERROR(sj::CheckObject(
        *it, "serving",
        {"memory_bytes", "threads", "compute_threads", "max_batch", "max_delay_ms", "max_queue"},
        "key"));
    ServeConfig::Serving& s = c.serving;
    const auto field = [&](const char* key, int64_t lo, int64_t hi, auto* out) {
      const auto f = it->find(key);
      if (f == it->end()) return eng::Status::Ok();
      int64_t v = 0;
      TRAININGD_RETURN_IF_ERROR(sj::ReadInt(*f, sj::Child("serving", key), lo, hi, &v));
      *out = static_cast<std::remove_pointer_t<decltype(out)>>(v);
      return eng::Status::Ok();
    };
    TRAININGD_RETURN_IF_ERROR(field("memory_bytes", 1 << 20, kBytes, &s.memory_bytes));
    TRAININGD_RETURN_IF_ERROR(field("threads", 1, 64, &s.threads));
    TRAININGD_RETURN_IF_ERROR(field("compute_threads", 0, 1024, &s.compute_threads));
    TRAININGD_RETURN_IF_ERROR(field("max_batch", 1, 65536, &s.max_batch));
    TRAININGD_RETURN_IF_ERROR(field("max_delay_ms", 0, 1000, &s.max_delay_ms));
    TRAININGD_RETURN_IF_ERROR(field("max_queue", 1, int64_t{1} << 24, &s.max_queue));
    if (s.max_queue < s.max_batch)
      return sj::Bad("serving.max_queue", "must be at least max_batch");
  }
  if (const auto it = doc.find("mpi"); it != doc.end()) {
    TRAININGD_RETURN_IF_ERROR(sj::CheckObject(*it, "mpi", {"hostfile", "mpirun_options"}, "key"));
    TRAININGD_RETURN_IF_ERROR(sj::Field(*it, "mpi", "hostfile", &c.mpi_hostfile));
    TRAININGD_RETURN_IF_ERROR(sj::Field(*it, "mpi", "mpirun_options", &c.mpirun_options));
    if (!c.mpi_hostfile.empty() && c.mpi_hostfile.front() != '/') {
      return sj::Bad("mpi.hostfile", "must be an absolute path");
    }
  }
  TRAININGD_RETURN_IF_ERROR(sj::Field(doc, "", "executor", &c.executor));
  if (c.executor != "local" && c.executor != "slurm") {
    return sj::Bad("executor", "must be \"local\" or \"slurm\", got " + sj::Quote(c.executor));
  }
  if (const auto it = doc.find("slurm"); it != doc.end()) {
    TRAININGD_RETURN_IF_ERROR(ApplySlurm(*it, c.slurm));
  }
  if (c.executor == "slurm" && c.slurm.job_root.empty()) {
    return sj::Bad("slurm.job_root",
                   "is required with executor \"slurm\": a directory the daemon and the "
                   "nodes share");
  }
  return eng::Status::Ok();
}

}  // namespace

bool IsLoopback(const std::string& a) {
  return a == "localhost" || a == "::1" || a.rfind("127.", 0) == 0;
}

eng::Status ParseListen(const std::string& text, const std::string& field, ServeConfig& config) {
  std::string host, port;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return Bad(field, "expected [IPv6]:PORT, got '" + text + "'");
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      return Bad(field, "expected ADDRESS:PORT, got '" + text + "'");
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  int p = 0;
  TRAININGD_RETURN_IF_ERROR(ParseInt(port, field.empty() ? "port" : field + " port", 0, 65535, p));
  config.listen_address = host;
  config.listen_port = p;
  return eng::Status::Ok();
}

eng::Status LoadConfigFile(const std::string& path, ServeConfig& c) {
  std::ifstream in(path);
  if (!in) return eng::Status::NotFound(path + ": cannot read the config file");
  std::ostringstream text;
  text << in.rdbuf();
  return ParseConfigText(text.str(), path, c);
}

eng::Status ParseConfigText(std::string_view text, const std::string& path, ServeConfig& c) {
  auto doc = sj::Parse(text);
  eng::Status st = doc.ok() ? eng::Status::Ok() : doc.status();
  if (st.ok()) {
    st = doc->is_object() ? ApplyConfig(*doc, c) : sj::Bad("", "must be a JSON object");
  }
  if (st.ok()) return st;
  return eng::Status::InvalidArgument(path + ": " + st.message());
}

Flags ServeFlags(ServeConfig& c) {
  Flags f("serve", "",
          "Serves the REST API and dashboard (default 127.0.0.1:8080, data in ./var). Flags win\n"
          "over the config file's keys (docs/operations.md#configuration).\n");
  const auto status = [](const eng::Status& st) -> std::optional<std::string> {
    if (st.ok()) return std::nullopt;
    return st.message();
  };
  // Read before the other flags (ParseServeArgs), so that they win.
  f.Add("--config", "FILE", "a JSON config file", [](const std::string&) { return std::nullopt; })
      .Add("--listen", "ADDR:PORT", "the address to listen on (127.0.0.1:8080)",
           [&c, status](const std::string& v) { return status(ParseListen(v, "", c)); })
      .String("--data-dir", "DIR", "the database and the jobs' files (var)", &c.data_dir)
      .String("--data-root", "DIR", "datasets are directories under it (/usr/share/datasets)",
              &c.data_root)
      .String("--datasets-dir", "DIR", "uploaded datasets (<data-dir>/datasets)", &c.datasets_dir)
      .String("--web-dir", "DIR", "the dashboard's files (next to the executable)", &c.web_dir)
      .Int("--max-concurrent-jobs", "jobs training at once (1)", 1, kMaxConcurrentJobs,
           &c.max_concurrent_jobs)
      .Int("--max-connections", "HTTP connections open at once (1024)", 1, kMaxConnections,
           &c.max_connections);
  return f;
}

eng::Status ParseServeArgs(const std::vector<std::string>& args, ServeConfig& c) {
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--config") TRAININGD_RETURN_IF_ERROR(LoadConfigFile(args[i + 1], c));
  }
  TRAININGD_RETURN_IF_ERROR(ServeFlags(c).Parse(args));
  TRAININGD_RETURN_IF_ERROR(ReadToken(c));
  if (!IsLoopback(c.listen_address) && c.token.empty()) {
    return Bad("--listen", "refusing to listen on " + c.listen_address +
                               " without an API token (set token_file in the config or "
                               "TRAININGD_TOKEN)");
  }
  return eng::Status::Ok();
}

}  // namespace trainingd::daemon
