// What every client command shares: the daemon's address and token, the output mode, the exit
// codes, Ctrl-C, and calls to the API with its errors mapped to exit codes (docs/cli.md).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainingd/api/http_client.h"
#include "trainingd/api/job_service.h"
#include "trainingd/daemon/service/flags.h"

namespace trainingd::daemon::client {

// The exit codes, one meaning each (`trainingd help exit-codes`).
inline constexpr int kExitCompleted = 0;      // the job completed, or the command succeeded
inline constexpr int kExitFailed = 1;         // the job failed, or any other error
inline constexpr int kExitUsage = 2;          // a usage error, or a spec that failed validation
inline constexpr int kExitStopped = 3;        // the job was stopped
inline constexpr int kExitAuth = 4;           // the daemon refused the token (401)
inline constexpr int kExitUnreachable = 5;    // no connection to the daemon
inline constexpr int kExitNewerData = 6;      // serve, db: data written by a newer trainingd
inline constexpr int kExitTimeout = 124;      // --timeout ran out
inline constexpr int kExitInterrupted = 130;  // Ctrl-C: the client detached; the job runs on

const char* ExitCodesText();

// The exit code of a job or an experiment in an end state (completed 0, failed 1, stopped 3);
// -1 otherwise.
int ExitCodeOfState(api::JobState state);
int ExitCodeOfState(api::ExperimentState state);
bool IsEndState(api::JobState state);
bool IsEndState(api::ExperimentState state);

enum class OutputMode { kTable, kJson, kJsonl, kCsv, kQuiet };

struct ClientOptions {
  std::string server;      // --server; else TRAININGD_URL; else http://127.0.0.1:8080
  std::string token_file;  // --token-file; else TRAININGD_TOKEN_FILE
  std::string output;      // -o: json, jsonl, csv ("" = a table)
  bool quiet = false;      // -q: ids only
};

// Adds --server and --token-file to `flags`, and with `output` -o/--output and -q.
void AddClientFlags(Flags& flags, ClientOptions* options, bool output = true);

// An error that ends the command: its message (printed on stderr) and exit code.
struct Failure {
  int exit_code = kExitFailed;
  std::string message;
};

// A connected client: the resolved options and the HTTP client. Ctrl-C (SIGINT) sets a flag
// that ends any call in progress with kExitInterrupted.
class Client {
 public:
  // Resolves the address, the token and the output mode; a Failure (exit 2) for a bad one.
  static std::optional<Client> Make(const std::string& command, const ClientOptions& options,
                                    Failure* failure);

  // A call whose answer is JSON. 2xx: the parsed body (null for 204). Otherwise a Failure:
  // 401 -> 4, 400 from a submit -> 2 (with `invalid_is_usage`), anything else 1; no connection
  // -> 5, a deadline -> 124, Ctrl-C -> 130.
  std::optional<nlohmann::json> Call(std::string_view method, const std::string& target,
                                     Failure* failure, std::string_view body = {},
                                     bool invalid_is_usage = false,
                                     api::Deadline deadline = api::kNoDeadline);
  // A Failure for an answer that is not 2xx (used by Call, uploads and downloads).
  static Failure FromReply(const api::HttpReply& reply, bool invalid_is_usage);
  static Failure FromStatus(const engine::Status& status);

  api::HttpClient& http() { return http_; }
  OutputMode mode() const { return mode_; }
  const std::string& command() const { return command_; }
  bool stdout_tty() const { return stdout_tty_; }
  bool stderr_tty() const { return stderr_tty_; }
  bool colour() const { return colour_; }
  // True once the daemon has answered a Call of this command (with any status): from then on,
  // not reaching it is a restart or a dropped connection to ride out, not a daemon that is not
  // there.
  bool answered() const { return answered_; }
  // Prints "trainingd <command>: <message>" on stderr and returns the exit code.
  int Fail(const Failure& failure) const;

 private:
  Client(std::string command, api::HttpClient::Options options, OutputMode mode);
  std::string command_;
  api::HttpClient http_;
  OutputMode mode_ = OutputMode::kTable;
  bool stdout_tty_ = false, stderr_tty_ = false, colour_ = false;
  bool answered_ = false;
};

// True once Ctrl-C was pressed (after Client::Make installed the handler).
bool Interrupted();

// "/api/v1/jobs/<id>", "/api/v1/experiments/<id>" with the id percent-encoded.
std::string JobPath(std::string_view id);
std::string ExperimentPath(std::string_view id);
std::string Encode(std::string_view text);

// A list read page by page (`jobs list`, `experiments list`): GET `collection`?limit=&state=
// &cursor= until `limit` items or the last page. `read_page(doc, &next_cursor)` reads one
// answer's items (the API's readers). Fills *all with the API's objects under `key` and *items
// with what was read; false with *f set when a call or an answer fails.
template <typename Item, typename ReadPage>
bool ReadPages(Client& c, const std::string& collection, const std::string& key,
               const std::string& state, int64_t limit, ReadPage read_page, nlohmann::json* all,
               std::vector<Item>* items, Failure* f) {
  *all = nlohmann::json::array();
  items->clear();
  std::string cursor;
  while (static_cast<int64_t>(items->size()) < limit) {
    const int64_t want =
        std::min<int64_t>(limit - static_cast<int64_t>(items->size()), api::kMaxListLimit);
    std::string target = collection + "?limit=" + std::to_string(want);
    if (!state.empty()) target += "&state=" + state;
    if (!cursor.empty()) target += "&cursor=" + Encode(cursor);
    auto doc = c.Call("GET", target, f);
    if (!doc) return false;
    cursor.clear();
    auto page = read_page(*doc, &cursor);
    if (!page.ok()) {
      *f = {kExitFailed, "the daemon's answer: " + page.status().message()};
      return false;
    }
    for (size_t i = 0; i < page->size(); ++i) {
      all->push_back((*doc)[key][i]);
      items->push_back(std::move((*page)[i]));
    }
    if (cursor.empty()) break;
  }
  return true;
}

// Output of rows: aligned columns (a terminal), tab-separated (piped), CSV; `colour_column`
// (-1 = none) is coloured by its value (a job's state) on a terminal without NO_COLOR.
struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  int colour_column = -1;
};
void PrintTable(const Client& client, const Table& table);
// The API's objects: the whole answer (-o json), one object per line from `items` (-o jsonl).
void PrintJson(const nlohmann::json& whole, const nlohmann::json& items, OutputMode mode);
// One API object as the verbs that return it print it: its `id` (-q), the object as it came
// (`doc`; -o json, jsonl), else `table` (one row). Returns 0.
int PrintObject(const Client& client, const nlohmann::json& doc, const std::string& id,
                const Table& table);

std::string FormatTime(double seconds_since_epoch);  // "2026-11-27 04:41:13" UTC; "-" for 0
std::string FormatNumber(double value);              // shortest of %.4g, "-" for NaN

// Parses the verb's flags, connects, and runs `body` with the client; `command` is "jobs
// submit", ... (the prefix of its messages). A bad flag or option exits 2 before `body`.
int WithClient(const std::string& command, Flags& flags, const ClientOptions& options,
               const std::vector<std::string>& args, const std::function<int(Client&)>& body);

// Exit 2 for a verb that takes one id (`noun`: "job id") and got none or several.
int NeedOne(const std::string& command, const char* noun, const std::vector<std::string>& got,
            const Flags& flags);

// The delete verbs: asks "Delete <what>?" unless `yes` (exit 2 without --yes when stdin is not
// a terminal, 1 when the answer was not yes), then DELETE `path`; the deleted `id` on stdout (-q)
// and "deleted ID" on a terminal's stderr. The exit code.
int DeleteResource(Client& client, const std::string& path, const std::string& id,
                   const std::string& what, bool yes);

// --timeout's DUR: "90s", "500ms", "10m", "2h", or seconds ("30", "0.5"); nullopt if malformed.
std::optional<std::chrono::milliseconds> ParseDuration(const std::string& text);
// The deadline of --timeout DUR (kNoDeadline for ""); a Failure (exit 2) for a malformed DUR.
std::optional<api::Deadline> TimeoutDeadline(const std::string& timeout, Failure* failure);

// "a.b[2].c=value" applied to `doc`, creating objects on the way; the value is JSON when it
// parses as JSON, otherwise a string. The error ("<path>: ...") when it cannot be applied.
std::optional<std::string> SetPath(nlohmann::json& doc, const std::string& assignment);
// A spec from `file` ("-" = stdin) as strict JSON, with each --set applied; a Failure (exit 2)
// naming the file or the --set otherwise.
std::optional<nlohmann::json> ReadSpec(const std::string& file,
                                       const std::vector<std::string>& sets, Failure* failure);
// `submit -f`'s first words, before it follows what it submitted: the id alone on stdout with
// -q, else "trainingd: submitted <kind> <id>" on stderr. Returns the id from the `answer`.
std::string AnnounceSubmitted(const Client& client, const nlohmann::json& answer, const char* kind);

// A command group's verbs ("jobs": submit, list, ...), each run with the arguments after it.
using Verb = int (*)(const std::vector<std::string>& args);
// Runs the verb args[0] of `group`: its usage on stdout and 0 for -h, --help or help; on stderr
// and kExitUsage for no verb or an unknown one.
int RunVerb(const char* group, const std::map<std::string, Verb>& verbs, const char* usage,
            const std::vector<std::string>& args);

}  // namespace trainingd::daemon::client
