#include "trainingd/daemon/config.h"

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "trainingd/api/browser_policy.h"
#include "trainingd/daemon/job_manager.h"

namespace trainingd::daemon {
namespace eng = trainingd::engine;
using json = nlohmann::json;

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

// A JSON array of strings, each accepted by `valid` (else an error naming its index).
template <typename Valid>
eng::Status StringList(const json& value, const std::string& field, std::vector<std::string>& out,
                       Valid valid, const std::string& what) {
  if (!value.is_array())
    return eng::Status::InvalidArgument(field + ": must be an array of strings");
  std::vector<std::string> list;
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string at = field + "[" + std::to_string(i) + "]";
    if (!value[i].is_string()) return eng::Status::InvalidArgument(at + ": must be a string");
    std::string s = value[i].get<std::string>();
    if (!valid(s))
      return eng::Status::InvalidArgument(at + ": must be " + what + ", got '" + s + "'");
    list.push_back(std::move(s));
  }
  out = std::move(list);
  return eng::Status::Ok();
}

constexpr int kMaxConnections = 1000000;

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
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    return eng::Status::InvalidArgument(path + ": invalid JSON: " + e.what());
  }
  if (!doc.is_object()) return eng::Status::InvalidArgument(path + ": must be a JSON object");
  for (const auto& item : doc.items()) {
    // Plain references, not a structured binding: clang before 16 cannot capture those.
    const std::string& key = item.key();
    const json& value = item.value();
    const std::string field = path + ": " + key;
    auto str = [&](std::string& out) -> eng::Status {
      if (!value.is_string()) return eng::Status::InvalidArgument(field + ": must be a string");
      out = value.get<std::string>();
      return eng::Status::Ok();
    };
    auto integer = [&](int lo, int hi, int& out) -> eng::Status {
      if (!value.is_number_integer() || value.get<int64_t>() < lo || value.get<int64_t>() > hi) {
        return eng::Status::InvalidArgument(field + ": must be an integer in [" +
                                            std::to_string(lo) + ", " + std::to_string(hi) + "]");
      }
      out = value.get<int>();
      return eng::Status::Ok();
    };
    auto bytes = [&](int64_t lo, int64_t& out) -> eng::Status {
      if (!value.is_number_integer() || value.get<int64_t>() < lo) {
        return eng::Status::InvalidArgument(field + ": must be an integer >= " +
                                            std::to_string(lo) + " (bytes)");
      }
      out = value.get<int64_t>();
      return eng::Status::Ok();
    };
    if (key == "listen") {
      std::string s;
      TRAININGD_RETURN_IF_ERROR(str(s));
      TRAININGD_RETURN_IF_ERROR(ParseListen(s, field, c));
    } else if (key == "data_dir") {
      TRAININGD_RETURN_IF_ERROR(str(c.data_dir));
    } else if (key == "data_root") {
      TRAININGD_RETURN_IF_ERROR(str(c.data_root));
    } else if (key == "web_dir") {
      TRAININGD_RETURN_IF_ERROR(str(c.web_dir));
    } else if (key == "token_file") {
      TRAININGD_RETURN_IF_ERROR(str(c.token_file));
    } else if (key == "max_concurrent_jobs") {
      TRAININGD_RETURN_IF_ERROR(integer(1, kMaxConcurrentJobs, c.max_concurrent_jobs));
    } else if (key == "threads_per_job") {
      TRAININGD_RETURN_IF_ERROR(integer(0, 256, c.threads_per_job));
    } else if (key == "http_threads") {
      TRAININGD_RETURN_IF_ERROR(integer(1, 64, c.http_threads));
    } else if (key == "http_handler_threads") {
      TRAININGD_RETURN_IF_ERROR(integer(1, 64, c.http_handler_threads));
    } else if (key == "allowed_hosts") {
      TRAININGD_RETURN_IF_ERROR(StringList(
          value, field, c.allowed_hosts,
          [](const std::string& s) { return api::ParseHostAndPort(s).has_value(); },
          "a host name or IP address with an optional :port"));
    } else if (key == "allowed_origins") {
      TRAININGD_RETURN_IF_ERROR(StringList(
          value, field, c.allowed_origins,
          [](const std::string& s) { return api::NormalizeOrigin(s).has_value(); },
          "an origin http://host[:port] or https://host[:port], without a path"));
    } else if (key == "max_connections") {
      TRAININGD_RETURN_IF_ERROR(integer(1, kMaxConnections, c.max_connections));
    } else if (key == "max_job_memory_bytes") {
      TRAININGD_RETURN_IF_ERROR(bytes(-1, c.max_job_memory_bytes));
    } else if (key == "max_job_disk_bytes") {
      TRAININGD_RETURN_IF_ERROR(bytes(-1, c.max_job_disk_bytes));
    } else if (key == "max_checkpoints_per_job") {
      TRAININGD_RETURN_IF_ERROR(integer(1, 100000, c.max_checkpoints_per_job));
    } else if (key == "max_profiler_traces_per_job") {
      TRAININGD_RETURN_IF_ERROR(integer(1, 100000, c.max_profiler_traces_per_job));
    } else if (key == "max_log_bytes_per_job") {
      TRAININGD_RETURN_IF_ERROR(bytes(4096, c.max_log_bytes_per_job));
    } else if (key == "max_crash_restarts") {
      TRAININGD_RETURN_IF_ERROR(integer(0, 1000, c.max_crash_restarts));
    } else {
      return eng::Status::InvalidArgument(
          field +
          ": unknown key; known: listen, data_dir, data_root, web_dir, token_file, "
          "max_concurrent_jobs, threads_per_job, http_threads, http_handler_threads, "
          "allowed_hosts, allowed_origins, max_connections, max_job_memory_bytes, "
          "max_job_disk_bytes, max_checkpoints_per_job, max_profiler_traces_per_job, "
          "max_log_bytes_per_job, max_crash_restarts");
    }
  }
  return eng::Status::Ok();
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
