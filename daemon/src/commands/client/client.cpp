#include "commands/client/client.h"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>

#include "trainingd/api/job_json.h"
#include "trainingd/api/strict_json.h"

namespace trainingd::daemon::client {
namespace {

std::atomic<bool> g_interrupted{false};

void OnSigint(int) { g_interrupted.store(true); }

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

const char* StateColour(const std::string& state) {
  if (state == "completed") return "\033[32m";
  if (state == "failed") return "\033[31m";
  if (state == "stopped" || state == "stopping") return "\033[33m";
  if (state == "running") return "\033[36m";
  return "";
}

// Display width of UTF-8 text: code points, not bytes (good enough for names and states).
size_t Width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace

const char* ExitCodesText() {
  return "Exit codes of trainingd's client commands (jobs, experiments, datasets):\n"
         "    0  the job or experiment completed (or the command succeeded)\n"
         "    1  it failed, or any other error (not found, a conflict, a server error)\n"
         "    2  a usage error, or a spec that failed validation (locally or at the daemon)\n"
         "    3  the job or experiment was stopped\n"
         "    4  the daemon refused the token (401): set TRAININGD_TOKEN or --token-file\n"
         "    5  the daemon is unreachable (--server, TRAININGD_URL)\n"
         "  124  --timeout ran out (the job or experiment keeps running)\n"
         "  130  Ctrl-C: the client detached, the job or experiment keeps running; the hint on\n"
         "       stderr says how to reattach\n"
         "Commands that follow a job (submit -f, resume -f, logs -f, wait, stop --wait, watch)\n"
         "or an experiment (submit -f, resume -f, wait, stop --wait) exit with how it ended;\n"
         "others with 0 on success.\n"
         "\n"
         "Exit codes of trainingd serve and trainingd db (docs/operations.md#upgrading):\n"
         "    0  serve: stopped cleanly; db: done\n"
         "    1  any other failure (another trainingd holds the data directory, a file that is\n"
         "       not a trainingd store, I/O; serve: writes lost at exit)\n"
         "    2  a usage error or a bad config\n"
         "    6  the data directory, its database or the file given was written by a newer\n"
         "       trainingd (a newer schema or data format): nothing was changed; use that\n"
         "       trainingd or a newer one, or restore a backup\n";
}

bool IsEndState(api::JobState s) {
  return s == api::JobState::kCompleted || s == api::JobState::kFailed ||
         s == api::JobState::kStopped;
}

int ExitCodeOfState(api::JobState s) {
  switch (s) {
    case api::JobState::kCompleted:
      return kExitCompleted;
    case api::JobState::kFailed:
      return kExitFailed;
    case api::JobState::kStopped:
      return kExitStopped;
    default:
      return -1;
  }
}

bool IsEndState(api::ExperimentState s) {
  return s == api::ExperimentState::kCompleted || s == api::ExperimentState::kFailed ||
         s == api::ExperimentState::kStopped;
}

int ExitCodeOfState(api::ExperimentState s) {
  switch (s) {
    case api::ExperimentState::kCompleted:
      return kExitCompleted;
    case api::ExperimentState::kFailed:
      return kExitFailed;
    case api::ExperimentState::kStopped:
      return kExitStopped;
    default:
      return -1;
  }
}

void AddClientFlags(Flags& flags, ClientOptions* o, bool output) {
  flags.String("--server", "URL", "the daemon (TRAININGD_URL; http://127.0.0.1:8080)", &o->server)
      .String("--token-file", "FILE", "a file holding the API token (TRAININGD_TOKEN_FILE)",
              &o->token_file);
  if (!output) return;
  flags.String("-o", "FORMAT", "json, jsonl or csv: the API's objects (a table)", &o->output)
      .String("--output", "FORMAT", "the same as -o", &o->output)
      .Switch("-q", "ids only, one per line", &o->quiet);
}

bool Interrupted() { return g_interrupted.load(); }

std::string Encode(std::string_view text) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string JobPath(std::string_view id) { return "/api/v1/jobs/" + Encode(id); }

std::string ExperimentPath(std::string_view id) { return "/api/v1/experiments/" + Encode(id); }

Client::Client(std::string command, api::HttpClient::Options options, OutputMode mode)
    : command_(std::move(command)), http_(std::move(options)), mode_(mode) {
  stdout_tty_ = isatty(STDOUT_FILENO) == 1;
  stderr_tty_ = isatty(STDERR_FILENO) == 1;
  colour_ = stdout_tty_ && Env("NO_COLOR").empty() && Env("TERM") != "dumb";
}

std::optional<Client> Client::Make(const std::string& command, const ClientOptions& o,
                                   Failure* failure) {
  std::string url = o.server;
  if (url.empty()) url = Env("TRAININGD_URL");
  if (url.empty()) url = "http://127.0.0.1:8080";
  auto server = api::ParseServerUrl(url);
  if (!server.ok()) {
    *failure = {kExitUsage, "--server: " + server.status().message()};
    return std::nullopt;
  }
  OutputMode mode = OutputMode::kTable;
  if (o.output == "json") {
    mode = OutputMode::kJson;
  } else if (o.output == "jsonl") {
    mode = OutputMode::kJsonl;
  } else if (o.output == "csv") {
    mode = OutputMode::kCsv;
  } else if (!o.output.empty()) {
    *failure = {kExitUsage, "-o: must be json, jsonl or csv, got '" + o.output + "'"};
    return std::nullopt;
  }
  if (o.quiet) {
    if (!o.output.empty()) {
      *failure = {kExitUsage, "-q: not with -o"};
      return std::nullopt;
    }
    mode = OutputMode::kQuiet;
  }
  api::HttpClient::Options options;
  options.server = *server;
  options.token = Env("TRAININGD_TOKEN");
  std::string token_file = o.token_file.empty() ? Env("TRAININGD_TOKEN_FILE") : o.token_file;
  if (!o.token_file.empty() || (options.token.empty() && !token_file.empty())) {
    std::ifstream in(token_file);
    if (!in) {
      *failure = {kExitUsage, "--token-file: cannot read '" + token_file + "'"};
      return std::nullopt;
    }
    std::stringstream text;
    text << in.rdbuf();
    options.token = Trim(text.str());
  }
  options.cancelled = [] { return g_interrupted.load(); };
  struct sigaction sa = {};
  sa.sa_handler = OnSigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  return Client(command, std::move(options), mode);
}

Failure Client::FromStatus(const engine::Status& st) {
  switch (st.code()) {
    case engine::StatusCode::kUnavailable:
      return {kExitUnreachable, "the daemon is unreachable: " + st.message()};
    case engine::StatusCode::kDeadlineExceeded:
      return {kExitTimeout, "timed out"};
    case engine::StatusCode::kCancelled:
      return {kExitInterrupted, "interrupted"};
    case engine::StatusCode::kInvalidArgument:
      return {kExitUsage, st.message()};
    default:
      return {kExitFailed, st.message()};
  }
}

Failure Client::FromReply(const api::HttpReply& reply, bool invalid_is_usage) {
  std::string code, message, field;
  const auto body = nlohmann::json::parse(reply.body, nullptr, false);
  if (!api::ErrorFromJson(body, &code, &message, &field)) {
    message = "HTTP " + std::to_string(reply.status);
  }
  if (reply.status == 401) {
    return {kExitAuth, message + " (set TRAININGD_TOKEN or --token-file)"};
  }
  if (reply.status == 400 && invalid_is_usage) return {kExitUsage, message};
  return {kExitFailed, message};
}

std::optional<nlohmann::json> Client::Call(std::string_view method, const std::string& target,
                                           Failure* failure, std::string_view body,
                                           bool invalid_is_usage, api::Deadline deadline) {
  auto reply = http_.Request(
      method, target, body,
      body.empty() && method == "GET" ? std::string_view() : std::string_view("application/json"),
      deadline);
  if (!reply.ok()) {
    *failure = FromStatus(reply.status());
    return std::nullopt;
  }
  answered_ = true;
  if (reply->status / 100 != 2) {
    *failure = FromReply(*reply, invalid_is_usage);
    return std::nullopt;
  }
  if (reply->body.empty()) return nlohmann::json(nullptr);
  auto doc = nlohmann::json::parse(reply->body, nullptr, false);
  if (doc.is_discarded()) {
    *failure = {kExitFailed, "the daemon's answer is not JSON"};
    return std::nullopt;
  }
  return doc;
}

int Client::Fail(const Failure& f) const {
  std::fprintf(stderr, "trainingd %s: %s\n", command_.c_str(), f.message.c_str());
  return f.exit_code;
}

namespace {

// Cells joined by `sep`, each through `cell`, and a newline.
template <typename Cell>
std::string Joined(const std::vector<std::string>& cells, char sep, Cell cell) {
  std::string out;
  for (size_t i = 0; i < cells.size(); ++i) {
    if (i > 0) out += sep;
    out += cell(cells[i]);
  }
  return out + "\n";
}

}  // namespace

void PrintTable(const Client& client, const Table& t) {
  if (client.mode() == OutputMode::kCsv) {
    std::string out = Joined(t.header, ',', CsvField);
    for (const auto& row : t.rows) out += Joined(row, ',', CsvField);
    std::fputs(out.c_str(), stdout);
    return;
  }
  if (!client.stdout_tty()) {  // piped: tab-separated, no colour, the header first
    const auto same = [](const std::string& cell) { return cell; };
    std::string out = Joined(t.header, '\t', same);
    for (const auto& row : t.rows) out += Joined(row, '\t', same);
    std::fputs(out.c_str(), stdout);
    return;
  }
  std::vector<size_t> width(t.header.size(), 0);
  for (size_t i = 0; i < t.header.size(); ++i) width[i] = Width(t.header[i]);
  for (const auto& row : t.rows) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) {
      width[i] = std::max(width[i], Width(row[i]));
    }
  }
  const auto line = [&](const std::vector<std::string>& cells, bool header) {
    std::string out;
    for (size_t i = 0; i < cells.size(); ++i) {
      const bool last = i + 1 == cells.size();
      std::string cell = cells[i];
      const size_t pad = last ? 0 : width[i] - Width(cell) + 2;
      if (!header && client.colour() && static_cast<int>(i) == t.colour_column &&
          *StateColour(cell)) {
        cell = StateColour(cell) + cell + "\033[0m";
      }
      out += cell + std::string(pad, ' ');
    }
    out += "\n";
    std::fputs(out.c_str(), stdout);
  };
  line(t.header, true);
  for (const auto& row : t.rows) line(row, false);
}

void PrintJson(const nlohmann::json& whole, const nlohmann::json& items, OutputMode mode) {
  if (mode == OutputMode::kJsonl) {
    if (items.is_array()) {
      for (const auto& item : items) std::printf("%s\n", api::DumpJson(item).c_str());
    } else {
      std::printf("%s\n", api::DumpJson(items).c_str());
    }
    return;
  }
  std::printf("%s\n", whole.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
}

int PrintObject(const Client& c, const nlohmann::json& doc, const std::string& id,
                const Table& table) {
  switch (c.mode()) {
    case OutputMode::kQuiet:
      std::printf("%s\n", id.c_str());
      break;
    case OutputMode::kJson:
    case OutputMode::kJsonl:
      PrintJson(doc, doc, c.mode());
      break;
    default:
      PrintTable(c, table);
  }
  return 0;
}

std::string FormatTime(double t) {
  if (t <= 0) return "-";
  const std::time_t secs = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string FormatNumber(double v) {
  if (std::isnan(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

int WithClient(const std::string& command, Flags& flags, const ClientOptions& options,
               const std::vector<std::string>& args, const std::function<int(Client&)>& body) {
  return RunWithFlags(flags, args, [&]() -> int {
    Failure f;
    std::optional<Client> c = Client::Make(command, options, &f);
    if (!c) {
      std::fprintf(stderr, "trainingd %s: %s\n", command.c_str(), f.message.c_str());
      return f.exit_code;
    }
    return body(*c);
  });
}

int NeedOne(const std::string& command, const char* noun, const std::vector<std::string>& got,
            const Flags& flags) {
  const std::string what =
      got.empty() ? "no " + std::string(noun) + " given" : "one " + std::string(noun) + " only";
  std::fprintf(stderr, "trainingd %s: %s\n%s", command.c_str(), what.c_str(),
               flags.Usage().c_str());
  return kExitUsage;
}

// delete's question: nullopt to go on (--yes, or "y" typed on a terminal); otherwise the exit
// code.
static std::optional<int> ConfirmDelete(const Client& c, const std::string& what, bool yes) {
  if (yes) return std::nullopt;
  if (isatty(STDIN_FILENO) != 1) {
    return c.Fail({kExitUsage, "not deleting without --yes (stdin is not a terminal)"});
  }
  std::fprintf(stderr, "Delete %s? [y/N] ", what.c_str());
  std::string answer;
  std::getline(std::cin, answer);
  if (answer == "y" || answer == "Y" || answer == "yes") return std::nullopt;
  std::fprintf(stderr, "not deleted\n");
  return kExitFailed;
}

int DeleteResource(Client& c, const std::string& path, const std::string& id,
                   const std::string& what, bool yes) {
  if (auto code = ConfirmDelete(c, what, yes)) return *code;
  Failure f;
  if (!c.Call("DELETE", path, &f)) return c.Fail(f);
  if (c.mode() == OutputMode::kQuiet) std::printf("%s\n", id.c_str());
  if (c.stderr_tty()) std::fprintf(stderr, "deleted %s\n", id.c_str());
  return 0;
}

std::optional<std::chrono::milliseconds> ParseDuration(const std::string& text) {
  size_t end = 0;
  double v = 0;
  try {
    v = std::stod(text, &end);
  } catch (...) {
    return std::nullopt;
  }
  const std::string unit = text.substr(end);
  double scale = 1000;
  if (unit == "ms") {
    scale = 1;
  } else if (unit == "m") {
    scale = 60000;
  } else if (unit == "h") {
    scale = 3600000;
  } else if (!unit.empty() && unit != "s") {
    return std::nullopt;
  }
  if (!(v >= 0) || v * scale > 1e12) return std::nullopt;
  return std::chrono::milliseconds(static_cast<int64_t>(v * scale));
}

std::optional<api::Deadline> TimeoutDeadline(const std::string& timeout, Failure* failure) {
  if (timeout.empty()) return api::kNoDeadline;
  const auto d = ParseDuration(timeout);
  if (!d) {
    *failure = {kExitUsage,
                "--timeout: must be a duration (90s, 500ms, 10m), got '" + timeout + "'"};
    return std::nullopt;
  }
  return std::chrono::steady_clock::now() + *d;
}

std::optional<std::string> SetPath(nlohmann::json& doc, const std::string& assignment) {
  using nlohmann::json;
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) return "must be path=value, got '" + assignment + "'";
  const std::string path = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  json value = json::parse(text, nullptr, false);
  if (value.is_discarded()) value = text;
  json* at = &doc;
  size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '[') {
      const size_t close = path.find(']', i);
      if (close == std::string::npos) return path + ": unclosed '['";
      size_t index = 0;
      try {
        index = std::stoul(path.substr(i + 1, close - i - 1));
      } catch (...) {
        return path + ": bad index";
      }
      if (!at->is_array() || index >= at->size())
        return path + ": no element " + std::to_string(index);
      at = &(*at)[index];
      i = close + 1;
      if (i < path.size() && path[i] == '.') ++i;
      continue;
    }
    const size_t stop = path.find_first_of(".[", i);
    const std::string key =
        path.substr(i, stop == std::string::npos ? std::string::npos : stop - i);
    if (key.empty()) return path + ": empty key";
    if (at->is_null()) *at = json::object();
    if (!at->is_object()) return path + ": '" + key + "' is inside a value that is not an object";
    at = &(*at)[key];
    i = stop == std::string::npos ? path.size() : stop;
    if (i < path.size() && path[i] == '.') ++i;
  }
  *at = std::move(value);
  return std::nullopt;
}

std::optional<nlohmann::json> ReadSpec(const std::string& file,
                                       const std::vector<std::string>& sets, Failure* failure) {
  std::stringstream text;
  if (file == "-") {
    text << std::cin.rdbuf();
  } else {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      *failure = {kExitUsage, file + ": cannot read"};
      return std::nullopt;
    }
    text << in.rdbuf();
  }
  auto doc = api::strict_json::Parse(text.str());
  if (!doc.ok()) {
    *failure = {kExitUsage, file + ": " + doc.status().message()};
    return std::nullopt;
  }
  for (const std::string& s : sets) {
    if (auto err = SetPath(*doc, s)) {
      *failure = {kExitUsage, "--set " + *err};
      return std::nullopt;
    }
  }
  return std::move(*doc);
}

std::string AnnounceSubmitted(const Client& client, const nlohmann::json& answer,
                              const char* kind) {
  std::string id = answer.value("id", "");
  if (client.mode() == OutputMode::kQuiet) {
    std::printf("%s\n", id.c_str());
    std::fflush(stdout);
  } else {
    std::fprintf(stderr, "trainingd: submitted %s %s\n", kind, id.c_str());
  }
  return id;
}

int RunVerb(const char* group, const std::map<std::string, Verb>& verbs, const char* usage,
            const std::vector<std::string>& args) {
  if (args.empty()) {
    std::fputs(usage, stderr);
    return kExitUsage;
  }
  if (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::fputs(usage, stdout);
    return 0;
  }
  const auto it = verbs.find(args[0]);
  if (it == verbs.end()) {
    std::fprintf(stderr, "trainingd %s: unknown verb '%s'\n%s", group, args[0].c_str(), usage);
    return kExitUsage;
  }
  return it->second(std::vector<std::string>(args.begin() + 1, args.end()));
}

}  // namespace trainingd::daemon::client
