// `trainingd jobs <verb>`: the jobs of a running daemon (docs/cli.md#jobs).
#include <cstdio>
#include <deque>
#include <map>

#include "commands/client/client.h"
#include "commands/client/follow.h"
#include "trainingd/api/job_json.h"
#include "trainingd/api/job_spec_json.h"
#include "trainingd/daemon/commands/client_commands.h"
#include "trainingd/engine/io/checkpoint.h"

namespace trainingd::daemon {
// Named, not anonymous: the unity build compiles these files together, and the verbs share names.
namespace jobs_verbs {
using namespace client;  // NOLINT: this file is the client's
using nlohmann::json;

constexpr const char* kJobsUsage =
    "usage: trainingd jobs <verb> [flags]    (trainingd jobs <verb> --help)\n"
    "verbs:\n"
    "  submit SPEC       submit a job spec (validated here first); -f follows it to its end\n"
    "  list              the jobs, newest first\n"
    "  get ID            one job\n"
    "  logs ID           its log; -f follows it to the job's end\n"
    "  watch ID          one live line: state, step/max, loss, accuracy, examples/s, ETA\n"
    "  wait ID           until the job ends; the exit code says how (trainingd help exit-codes)\n"
    "  stop ID           a graceful stop (final checkpoint); --wait until stopped\n"
    "  resume ID         a stopped job back to the queue\n"
    "  set-priority ID   its place in the queue (--priority N, higher starts first)\n"
    "  delete ID         a job that is not running, with its files\n"
    "  scalars ID        one series (--tag)\n"
    "  checkpoints ID    the checkpoints kept\n"
    "  evaluation ID     its latest evaluation: metrics, per class, confusion matrix\n"
    "  export ID         the model as ONNX (-o FILE)\n";

std::vector<std::string> JobHeader() {
  return {"ID", "NAME", "STATE", "STEP", "LOSS", "ACCURACY", "CREATED"};
}

std::vector<std::string> JobRow(const api::JobInfo& j) {
  const auto scalar = [&](const char* tag) {
    const auto it = j.latest_scalars.find(tag);
    return it == j.latest_scalars.end() ? std::string("-") : FormatNumber(it->second);
  };
  // A job a quota holds says so: "queued (quota)" (jobs get shows which quota).
  std::string state = api::JobStateName(j.state);
  if (!j.waiting_reason.empty()) state += " (quota)";
  return {j.id,
          j.name,
          state,
          std::to_string(j.global_step) + "/" + std::to_string(j.max_steps),
          scalar("loss"),
          scalar("accuracy"),
          FormatTime(j.created_at)};
}

// Prints one job (the API's object as it came, `doc`) in the output mode.
int PrintJob(const Client& c, const json& doc) {
  auto job = api::JobFromJson(doc);
  if (!job.ok()) return c.Fail({kExitFailed, "the daemon's answer: " + job.status().message()});
  return PrintObject(c, doc, job->id, {JobHeader(), {JobRow(*job)}, 2});
}

int Evaluation(const std::vector<std::string>& args);  // jobs_evaluation.cpp

struct Verb {
  const char* synopsis;
  const char* about;
};

int Submit(const std::vector<std::string>& args) {
  ClientOptions o;
  std::vector<std::string> files, sets;
  bool follow = false;
  Flags flags("jobs submit", "SPEC.json",
              "Checks the spec here with the daemon's own parser (exit 2 naming the field), then\n"
              "submits it and prints the job. SPEC.json may be - for stdin.\n");
  flags.Positionals("spec file", 1, &files)
      .Add("--set", "PATH=VALUE", "change a field first (repeatable): --set max_steps=500",
           [&](const std::string& v) -> std::optional<std::string> {
             sets.push_back(v);
             return std::nullopt;
           })
      .Switch("-f", "follow the job to its end, printing its log; exit with how it ended", &follow)
      .Switch("--follow", "the same as -f", &follow);
  AddClientFlags(flags, &o);
  return WithClient("jobs submit", flags, o, args, [&](Client& c) -> int {
    if (files.size() != 1) {
      std::fprintf(stderr, "trainingd jobs submit: no spec file given\n%s", flags.Usage().c_str());
      return kExitUsage;
    }
    Failure f;
    auto doc = ReadSpec(files[0], sets, &f);
    if (!doc) return c.Fail(f);
    api::FieldError field;
    if (auto spec = api::JobSpecFromJson(*doc, &field); !spec.ok()) {
      return c.Fail({kExitUsage, "invalid spec: " + field.message});
    }
    auto job = c.Call("POST", "/api/v1/jobs", &f, doc->dump(), /*invalid_is_usage=*/true);
    if (!job) return c.Fail(f);
    if (!follow) return PrintJob(c, *job);
    const std::string id = AnnounceSubmitted(c, *job, "job");
    FollowOptions fo;
    fo.print_logs = c.mode() != OutputMode::kQuiet;
    return FollowJob(c, id, fo, nullptr);
  });
}

int List(const std::vector<std::string>& args) {
  ClientOptions o;
  std::string state;
  int64_t limit = 50;
  bool watch = false;
  Flags flags("jobs list", "",
              "The jobs, newest first (all pages up to --limit). With --watch it stays: a\n"
              "terminal's table is redrawn on every change; piped, each job whose row changes\n"
              "is printed again (-o jsonl: its object), until Ctrl-C.\n");
  flags
      .String("--state", "S", "queued, running, stopping, completed, failed, stopped or preempted",
              &state)
      .Int("--limit", "at most N jobs (50)", 1, 1000000, &limit)
      .Switch("-w", "follow the list's changes", &watch)
      .Switch("--watch", "the same as -w", &watch);
  AddClientFlags(flags, &o);
  return WithClient("jobs list", flags, o, args, [&](Client& c) -> int {
    if (!state.empty() && !api::ParseJobState(state)) {
      return c.Fail({kExitUsage, "--state: unknown state '" + state + "'"});
    }
    if (watch && c.mode() != OutputMode::kTable && c.mode() != OutputMode::kJsonl) {
      return c.Fail({kExitUsage, "--watch prints a table or -o jsonl"});
    }
    // The list as the daemon has it now: the API's objects and the jobs.
    json all;
    std::vector<api::JobInfo> jobs;
    const auto fetch = [&](Failure* f) {
      return ReadPages(
          c, "/api/v1/jobs", "jobs", state, limit,
          [](const json& doc, std::string* next) -> engine::Result<std::vector<api::JobInfo>> {
            auto page = api::JobPageFromJson(doc);
            if (!page.ok()) return page.status();
            *next = page->next_cursor;
            return std::move(page->jobs);
          },
          &all, &jobs, f);
    };
    const auto print_table = [&] {
      Table t{JobHeader(), {}, 2};
      for (const auto& j : jobs) t.rows.push_back(JobRow(j));
      PrintTable(c, t);
    };
    Failure f;
    if (!fetch(&f)) return c.Fail(f);
    switch (c.mode()) {
      case OutputMode::kQuiet:
        for (const auto& j : jobs) std::printf("%s\n", j.id.c_str());
        return 0;
      case OutputMode::kJson:
      case OutputMode::kJsonl:
        PrintJson(json{{"jobs", all}}, all, c.mode());
        break;
      default:
        print_table();
    }
    if (!watch) return 0;
    std::fflush(stdout);
    // What each job's row was when last shown, so a change the stream replays is not shown again.
    std::map<std::string, std::vector<std::string>> shown;
    for (const auto& j : jobs) shown[j.id] = JobRow(j);
    const bool redraw = c.stdout_tty() && c.mode() == OutputMode::kTable;
    return FollowJobList(c, [&](const std::string& id, Failure* f) {
      Failure missing;
      auto doc = c.Call("GET", JobPath(id), &missing);
      std::optional<api::JobInfo> job;
      if (doc) {
        auto read = api::JobFromJson(*doc);
        if (read.ok()) job = *read;
      }
      if (job && !state.empty() && api::JobStateName(job->state) != state && !shown.count(id)) {
        return true;  // not one the list shows
      }
      std::vector<std::string> row =
          job ? JobRow(*job) : std::vector<std::string>{id, "-", "deleted", "-", "-", "-", "-"};
      if (!job && !shown.count(id)) return true;
      if (shown[id] == row) return true;
      shown[id] = row;
      if (redraw) {
        if (!fetch(f)) return false;
        std::fputs("\033[H\033[2J", stdout);
        print_table();
      } else if (c.mode() == OutputMode::kJsonl) {
        std::printf("%s\n", (doc ? api::DumpJson(*doc)
                                 : api::DumpJson(json{{"id", id}, {"state", "deleted"}}))
                                .c_str());
      } else {
        std::string line;
        for (size_t i = 0; i < row.size(); ++i) line += (i ? "\t" : "") + row[i];
        std::printf("%s\n", line.c_str());
      }
      std::fflush(stdout);
      return true;
    });
  });
}

// get, checkpoints: one GET printed.
int Get(const std::vector<std::string>& args) {
  ClientOptions o;
  std::vector<std::string> ids;
  Flags flags("jobs get", "ID", "One job; -o json has its canonical spec.\n");
  flags.Positionals("job id", 1, &ids);
  AddClientFlags(flags, &o);
  return WithClient("jobs get", flags, o, args, [&](Client& c) -> int {
    if (ids.size() != 1) return NeedOne("jobs get", "job id", ids, flags);
    Failure f;
    auto doc = c.Call("GET", JobPath(ids[0]), &f);
    if (!doc) return c.Fail(f);
    if (c.mode() != OutputMode::kTable) return PrintJob(c, *doc);
    auto job = api::JobFromJson(*doc);
    if (!job.ok()) return c.Fail({kExitFailed, "the daemon's answer: " + job.status().message()});
    Table t{{"FIELD", "VALUE"}, {}, -1};
    const auto row = [&](const char* k, const std::string& v) { t.rows.push_back({k, v}); };
    row("id", job->id);
    row("name", job->name);
    row("state", api::JobStateName(job->state));
    row("owner", job->owner);
    row("priority", std::to_string(job->priority));
    if (!job->waiting_reason.empty()) row("waiting", job->waiting_reason);
    if (!job->preempted_by.empty()) row("preempted by", job->preempted_by);
    row("step", std::to_string(job->global_step) + "/" + std::to_string(job->max_steps));
    row("created", FormatTime(job->created_at));
    row("started", FormatTime(job->started_at));
    row("finished", FormatTime(job->finished_at));
    row("executor", job->executor);
    row("examples/s", FormatNumber(job->examples_per_sec));
    for (const auto& [tag, v] : job->latest_scalars) row(tag.c_str(), FormatNumber(v));
    if (!job->reason.empty()) row("reason", job->reason);
    if (!job->error.empty()) row("error", job->error);
    if (job->best_checkpoint) {
      row("best checkpoint", "step " + std::to_string(job->best_checkpoint->step) + ", " +
                                 job->best_checkpoint->metric + " " +
                                 FormatNumber(job->best_checkpoint->value));
    }
    PrintTable(c, t);
    return 0;
  });
}

int Checkpoints(const std::vector<std::string>& args) {
  ClientOptions o;
  std::vector<std::string> ids;
  Flags flags("jobs checkpoints", "ID", "The checkpoints the job keeps, oldest first.\n");
  flags.Positionals("job id", 1, &ids);
  AddClientFlags(flags, &o);
  return WithClient("jobs checkpoints", flags, o, args, [&](Client& c) -> int {
    if (ids.size() != 1) return NeedOne("jobs checkpoints", "job id", ids, flags);
    Failure f;
    auto doc = c.Call("GET", JobPath(ids[0]) + "/checkpoints", &f);
    if (!doc) return c.Fail(f);
    auto cps = api::CheckpointsFromJson(*doc);
    if (!cps.ok()) return c.Fail({kExitFailed, "the daemon's answer: " + cps.status().message()});
    if (c.mode() == OutputMode::kJson || c.mode() == OutputMode::kJsonl) {
      PrintJson(*doc, (*doc)["checkpoints"], c.mode());
      return 0;
    }
    Table t{{"STEP", "NAME", "BYTES", "MTIME"}, {}, -1};
    for (const auto& cp : *cps) {
      if (c.mode() == OutputMode::kQuiet) {
        std::printf("%lld\n", static_cast<long long>(cp.global_step));
        continue;
      }
      t.rows.push_back({std::to_string(cp.global_step), cp.name, std::to_string(cp.bytes),
                        FormatTime(cp.mtime)});
    }
    if (c.mode() != OutputMode::kQuiet) PrintTable(c, t);
    return 0;
  });
}

int Scalars(const std::vector<std::string>& args) {
  ClientOptions o;
  std::vector<std::string> ids;
  std::string tag;
  int64_t max_points = 1000;
  Flags flags("jobs scalars", "ID --tag TAG",
              "One series; a long one comes downsampled (each point a bucket's last value,\n"
              "with its min and max). Without --tag: the job's tags.\n");
  flags.Positionals("job id", 1, &ids)
      .String("--tag", "TAG", "the series: loss, accuracy, validation/loss, ...", &tag)
      .Int("--max-points", "at most N points (1000)", 1, api::kMaxScalarPoints, &max_points);
  AddClientFlags(flags, &o);
  return WithClient("jobs scalars", flags, o, args, [&](Client& c) -> int {
    if (ids.size() != 1) return NeedOne("jobs scalars", "job id", ids, flags);
    Failure f;
    if (tag.empty()) {
      auto doc = c.Call("GET", JobPath(ids[0]) + "/scalars/tags", &f);
      if (!doc) return c.Fail(f);
      if (c.mode() == OutputMode::kJson || c.mode() == OutputMode::kJsonl) {
        PrintJson(*doc, (*doc)["tags"], c.mode());
        return 0;
      }
      Table t{{"TAG"}, {}, -1};
      for (const auto& tg : (*doc)["tags"]) {
        if (tg.is_string()) t.rows.push_back({tg.get<std::string>()});
      }
      if (c.mode() == OutputMode::kQuiet) {
        for (const auto& r : t.rows) std::printf("%s\n", r[0].c_str());
      } else {
        PrintTable(c, t);
      }
      return 0;
    }
    auto doc = c.Call("GET",
                      JobPath(ids[0]) + "/scalars?tag=" + Encode(tag) +
                          "&max_points=" + std::to_string(max_points),
                      &f);
    if (!doc) return c.Fail(f);
    auto points = api::ScalarsFromJson(*doc);
    if (!points.ok())
      return c.Fail({kExitFailed, "the daemon's answer: " + points.status().message()});
    if (c.mode() == OutputMode::kJson || c.mode() == OutputMode::kJsonl) {
      PrintJson(*doc, (*doc)["points"], c.mode());
      return 0;
    }
    Table t{{"STEP", "VALUE", "MIN", "MAX", "WALL_TIME"}, {}, -1};
    for (const auto& p : *points) {
      char wall[32];
      std::snprintf(wall, sizeof wall, "%.3f", p.wall_time);
      t.rows.push_back({std::to_string(p.step), FormatNumber(p.value), FormatNumber(p.min),
                        FormatNumber(p.max), wall});
    }
    if (c.mode() == OutputMode::kQuiet) {
      for (const auto& r : t.rows) std::printf("%s\n", r[0].c_str());
    } else {
      PrintTable(c, t);
    }
    return 0;
  });
}

int Logs(const std::vector<std::string>& args) {
  ClientOptions o;
  std::vector<std::string> ids;
  bool follow = false;
  std::optional<int64_t> tail;
  Flags flags("jobs logs", "ID",
              "The job's log lines. -f follows it until the job ends (every line up to its end,\n"
              "across dropped connections and daemon restarts) and exits with how it ended.\n");
  flags.Positionals("job id", 1, &ids)
      .Switch("-f", "follow until the job ends", &follow)
      .Switch("--follow", "the same as -f", &follow)
      .Int("--tail", "only the last N lines (then follow, with -f)", 0, INT64_MAX, &tail);
  AddClientFlags(flags, &o);
  return WithClient("jobs logs", flags, o, args, [&](Client& c) -> int {
    if (ids.size() != 1) return NeedOne("jobs logs", "job id", ids, flags);
    const bool as_json = c.mode() == OutputMode::kJson || c.mode() == OutputMode::kJsonl;
    // Read up to the end now: all lines, or the last --tail of them.
    std::deque<api::LogLine> kept;
    int64_t next = 1;
    while (true) {
      Failure f;
      auto doc = c.Call("GET",
                        JobPath(ids[0]) + "/logs?from=" + std::to_string(next) +
                            "&limit=" + std::to_string(api::kMaxLogLines),
                        &f);
      if (!doc) return c.Fail(f);
      int64_t after = next;
      auto lines = api::LogLinesFromJson(*doc, &after);
      if (!lines.ok())
        return c.Fail({kExitFailed, "the daemon's answer: " + lines.status().message()});
      for (auto& l : *lines) {
        if (!tail) {
          if (as_json) {
            std::printf("%s\n", api::DumpJson({{"line", l.line}, {"text", l.text}}).c_str());
          } else {
            std::printf("%s\n", l.text.c_str());
          }
          continue;
        }
        kept.push_back(std::move(l));
        if (static_cast<int64_t>(kept.size()) > *tail) kept.pop_front();
      }
      next = std::max(after, next);
      if (static_cast<int64_t>(lines->size()) < api::kMaxLogLines) break;
    }
    for (const auto& l : kept) {
      if (as_json) {
        std::printf("%s\n", api::DumpJson({{"line", l.line}, {"text", l.text}}).c_str());
      } else {
        std::printf("%s\n", l.text.c_str());
      }
    }
    std::fflush(stdout);
    if (!follow) return 0;
    FollowOptions fo;
    fo.print_logs = true;
    fo.from_line = next;
    return FollowJob(c, ids[0], fo, nullptr);
  });
}

int Wait(const std::vector<std::string>& args) {
  ClientOptions o;
  std::vector<std::string> ids;
  std::string timeout;
  Flags flags("jobs wait", "ID",
              "Waits until the job ends and prints it; exits 0 completed, 1 failed, 3 stopped,\n"
              "124 when --timeout runs out (the job keeps running).\n");
  flags.Positionals("job id", 1, &ids)
      .String("--timeout", "DUR", "give up after DUR: 90s, 500ms, 10m, 2h (none)", &timeout);
  AddClientFlags(flags, &o);
  return WithClient("jobs wait", flags, o, args, [&](Client& c) -> int {
    if (ids.size() != 1) return NeedOne("jobs wait", "job id", ids, flags);
    Failure f;
    FollowOptions fo;
    const auto deadline = TimeoutDeadline(timeout, &f);
    if (!deadline) return c.Fail(f);
    fo.deadline = *deadline;
    api::JobInfo final;
    const int code = FollowJob(c, ids[0], fo, &final);
    if (final.id.empty()) return code;
    if (auto doc = c.Call("GET", JobPath(ids[0]), &f)) PrintJob(c, *doc);
    return code;
  });
}

int Watch(const std::vector<std::string>& args) {
  ClientOptions o;
  std::vector<std::string> ids;
  Flags flags("jobs watch", "ID",
              "One live line until the job ends: state, step/max, loss, accuracy, examples/s and\n"
              "ETA; a progress bar on a terminal, a line every 5 s when piped.\n");
  flags.Positionals("job id", 1, &ids);
  AddClientFlags(flags, &o, false);
  return WithClient("jobs watch", flags, o, args, [&](Client& c) -> int {
    if (ids.size() != 1) return NeedOne("jobs watch", "job id", ids, flags);
    FollowOptions fo;
    fo.watch = true;
    return FollowJob(c, ids[0], fo, nullptr);
  });
}

int Stop(const std::vector<std::string>& args) {
  ClientOptions o;
  std::vector<std::string> ids;
  bool wait = false;
  Flags flags("jobs stop", "ID",
              "A graceful stop: the job saves a final checkpoint, then is stopped.\n");
  flags.Positionals("job id", 1, &ids)
      .Switch("--wait", "wait until it has stopped; exit with how it ended", &wait);
  AddClientFlags(flags, &o);
  return WithClient("jobs stop", flags, o, args, [&](Client& c) -> int {
    if (ids.size() != 1) return NeedOne("jobs stop", "job id", ids, flags);
    Failure f;
    auto doc = c.Call("POST", JobPath(ids[0]) + "/stop", &f, "{}");
    if (!doc) return c.Fail(f);
    if (!wait) return PrintJob(c, *doc);
    api::JobInfo final;
    const int code = FollowJob(c, ids[0], FollowOptions{}, &final);
    if (final.id.empty()) return code;
    if (auto again = c.Call("GET", JobPath(ids[0]), &f)) PrintJob(c, *again);
    return code;
  });
}

int Resume(const std::vector<std::string>& args) {
  ClientOptions o;
  std::vector<std::string> ids;
  std::optional<int64_t> max_steps;
  bool follow = false;
  Flags flags("jobs resume", "ID",
              "Puts a stopped job (or a failed one with a checkpoint) back in the queue; it\n"
              "resumes from its latest checkpoint.\n");
  flags.Positionals("job id", 1, &ids)
      .Int("--max-steps", "a new max_steps (the job's)", 1, INT64_MAX, &max_steps)
      .Switch("-f", "follow it to its end, printing its new log lines", &follow)
      .Switch("--follow", "the same as -f", &follow);
  AddClientFlags(flags, &o);
  return WithClient("jobs resume", flags, o, args, [&](Client& c) -> int {
    if (ids.size() != 1) return NeedOne("jobs resume", "job id", ids, flags);
    // The log's end before the resume: -f prints only what the resumed run writes.
    int64_t from = 1;
    Failure f;
    if (follow) {
      while (true) {
        auto doc = c.Call("GET",
                          JobPath(ids[0]) + "/logs?from=" + std::to_string(from) +
                              "&limit=" + std::to_string(api::kMaxLogLines),
                          &f);
        if (!doc) return c.Fail(f);
        int64_t next = from;
        auto lines = api::LogLinesFromJson(*doc, &next);
        if (!lines.ok()) return c.Fail({kExitFailed, lines.status().message()});
        from = std::max(from, next);
        if (static_cast<int64_t>(lines->size()) < api::kMaxLogLines) break;
      }
    }
    const std::string body = max_steps ? json{{"max_steps", *max_steps}}.dump() : std::string("{}");
    auto doc = c.Call("POST", JobPath(ids[0]) + "/resume", &f, body);
    if (!doc) return c.Fail(f);
    if (!follow) return PrintJob(c, *doc);
    FollowOptions fo;
    fo.print_logs = true;
    fo.from_line = from;
    return FollowJob(c, ids[0], fo, nullptr);
  });
}

int Delete(const std::vector<std::string>& args) {
  ClientOptions o;
  std::vector<std::string> ids;
  bool yes = false;
  Flags flags("jobs delete", "ID",
              "Deletes a job that is not running, with its checkpoints, log and series. Asks\n"
              "first on a terminal; elsewhere needs --yes.\n");
  flags.Positionals("job id", 1, &ids).Switch("--yes", "do not ask", &yes);
  AddClientFlags(flags, &o);
  return WithClient("jobs delete", flags, o, args, [&](Client& c) -> int {
    if (ids.size() != 1) return NeedOne("jobs delete", "job id", ids, flags);
    return DeleteResource(c, JobPath(ids[0]), ids[0], "job " + ids[0] + " and all its files", yes);
  });
}

int Export(const std::vector<std::string>& args) {
  ClientOptions o;
  std::vector<std::string> ids;
  std::optional<int64_t> step;
  std::string output;
  std::string checkpoint;
  Flags flags("jobs export", "ID -o FILE",
              "Downloads the job's model as ONNX (GET /api/v1/jobs/{id}/model?format=onnx), the\n"
              "best checkpoint's (else the latest's), the latest's or step N's, and writes it\n"
              "atomically (docs/models.md).\n");
  flags.Positionals("job id", 1, &ids)
      .Int("--step", "the checkpoint of this global step (the best, else the latest)", 0, INT64_MAX,
           &step)
      .String("--checkpoint", "best|latest",
              "which checkpoint, instead of --step (the best, else the latest)", &checkpoint)
      .String("-o", "FILE", "the file to write (required)", &output)
      .String("--output", "FILE", "the same as -o", &output);
  AddClientFlags(flags, &o, false);
  return WithClient("jobs export", flags, o, args, [&](Client& c) -> int {
    if (ids.size() != 1) return NeedOne("jobs export", "job id", ids, flags);
    if (output.empty()) {
      std::fprintf(stderr, "trainingd jobs export: -o: required (the file)\n%s",
                   flags.Usage().c_str());
      return kExitUsage;
    }
    std::string target = JobPath(ids[0]) + "/model?format=onnx";
    if (step) target += "&step=" + std::to_string(*step);
    if (!checkpoint.empty() && checkpoint != "best" && checkpoint != "latest") {
      std::fprintf(stderr, "trainingd jobs export: --checkpoint: 'best' or 'latest', got '%s'\n",
                   checkpoint.c_str());
      return kExitUsage;
    }
    if (!checkpoint.empty()) target += "&checkpoint=" + checkpoint;
    auto reply = c.http().Request("GET", target);
    if (!reply.ok()) return c.Fail(Client::FromStatus(reply.status()));
    if (reply->status / 100 != 2) return c.Fail(Client::FromReply(*reply, false));
    if (engine::Status st = engine::WriteFileAtomically(output, reply->body); !st.ok()) {
      return c.Fail({kExitFailed, st.message()});
    }
    std::fprintf(stderr, "%s: %zu bytes (%s)\n", output.c_str(), reply->body.size(),
                 reply->content_disposition.c_str());
    return 0;
  });
}

int SetPriority(const std::vector<std::string>& args) {
  ClientOptions o;
  std::vector<std::string> ids;
  std::optional<int64_t> priority;
  Flags flags("jobs set-priority", "ID --priority N",
              "Changes the job's priority: a queued job takes its new place in the queue at once\n"
              "(higher starts first; equal priorities in arrival order). Its owner or an admin.\n");
  flags.Positionals("job id", 1, &ids)
      .Int("--priority", "the new priority, in [-1000, 1000] (the default of a job is 0)",
           engine::kMinJobPriority, engine::kMaxJobPriority, &priority);
  AddClientFlags(flags, &o);
  return WithClient("jobs set-priority", flags, o, args, [&](Client& c) -> int {
    if (ids.size() != 1) return NeedOne("jobs set-priority", "job id", ids, flags);
    if (!priority) {
      return c.Fail({kExitUsage, "jobs set-priority: --priority N is required"});
    }
    Failure f;
    auto doc = c.Call("PATCH", JobPath(ids[0]), &f, json{{"priority", *priority}}.dump());
    if (!doc) return c.Fail(f);
    return PrintJob(c, *doc);
  });
}

}  // namespace jobs_verbs

int JobsCommand(const std::vector<std::string>& args) {
  static const std::map<std::string, client::Verb> kVerbs = {
      {"submit", jobs_verbs::Submit},
      {"list", jobs_verbs::List},
      {"get", jobs_verbs::Get},
      {"logs", jobs_verbs::Logs},
      {"watch", jobs_verbs::Watch},
      {"wait", jobs_verbs::Wait},
      {"stop", jobs_verbs::Stop},
      {"resume", jobs_verbs::Resume},
      {"set-priority", jobs_verbs::SetPriority},
      {"delete", jobs_verbs::Delete},
      {"scalars", jobs_verbs::Scalars},
      {"checkpoints", jobs_verbs::Checkpoints},
      {"evaluation", jobs_verbs::Evaluation},
      {"export", jobs_verbs::Export}};
  return client::RunVerb("jobs", kVerbs, jobs_verbs::kJobsUsage, args);
}

}  // namespace trainingd::daemon
