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
#include <sstream>

#include "trainingd/api/job_json.h"

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
  return "Exit codes of trainingd's client commands (jobs, datasets):\n"
         "    0  the job completed (or the command succeeded)\n"
         "    1  the job failed, or any other error (not found, a conflict, a server error)\n"
         "    2  a usage error, or a job spec that failed validation (locally or at the daemon)\n"
         "    3  the job was stopped\n"
         "    4  the daemon refused the token (401): set TRAININGD_TOKEN or --token-file\n"
         "    5  the daemon is unreachable (--server, TRAININGD_URL)\n"
         "  124  --timeout ran out (the job keeps running)\n"
         "  130  Ctrl-C: the client detached, the job keeps running; the hint on stderr says how\n"
         "       to reattach\n"
         "Commands that follow a job (submit -f, resume -f, logs -f, wait, stop --wait, watch)\n"
         "exit with how the job ended; others with 0 on success.\n";
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
