// `trainingd experiments <verb>`: the hyperparameter searches of a running daemon
// (docs/cli.md#experiments, docs/experiments.md).
#include <algorithm>
#include <cstdio>
#include <map>

#include "commands/client/client.h"
#include "commands/client/follow.h"
#include "trainingd/api/experiment_json.h"
#include "trainingd/daemon/commands/client_commands.h"

namespace trainingd::daemon {
// Named, not anonymous: the unity build compiles these files together, and the verbs share names.
namespace experiment_verbs {
using namespace client;  // NOLINT: this file is the client's
using nlohmann::json;

constexpr const char* kExperimentsUsage =
    "usage: trainingd experiments <verb> [flags]    (trainingd experiments <verb> --help)\n"
    "verbs:\n"
    "  submit SPEC   submit an experiment spec (validated here first); --preview prints its plan;\n"
    "                -f follows it to its end\n"
    "  list          the experiments, newest first\n"
    "  get ID        one experiment: progress, budget, best trial, disk, the rung ladder\n"
    "  trials ID     its trials, a column per hyperparameter\n"
    "  wait ID       until it ends; the exit code says how (trainingd help exit-codes)\n"
    "  stop ID       stops its trials (each with a final checkpoint); --wait until stopped\n"
    "  resume ID     a stopped or failed experiment goes on where it was\n"
    "  delete ID     an experiment that is not running, with its trials' jobs and files\n";

constexpr const char* kNoun = "experiment id";

std::vector<std::string> ExperimentHeader() {
  return {"ID", "NAME", "STATE", "SEARCHER", "METRIC", "TRIALS", "BEST", "STEPS", "CREATED"};
}

std::vector<std::string> ExperimentRow(const api::ExperimentInfo& e) {
  return {e.id,
          e.name,
          api::ExperimentStateName(e.state),
          e.searcher,
          e.metric,
          std::to_string(e.trials_started) + "/" + std::to_string(e.max_trials),
          e.best ? FormatNumber(e.best->metric) : std::string("-"),
          std::to_string(e.steps_used),
          FormatTime(e.created_at)};
}

// A hyperparameter's value (JSON text) in a table: numbers with 4 significant digits, strings
// without their quotes, anything else as it is written.
std::string HyperparameterCell(const std::string& text) {
  const json v = json::parse(text, nullptr, false);
  if (v.is_number()) return FormatNumber(v.get<double>());
  if (v.is_string()) return v.get<std::string>();
  return text;
}

std::string HyperparameterList(const api::Hyperparameters& hp) {
  std::string out;
  for (const auto& [path, value] : hp) {
    out += (out.empty() ? "" : " ") + path + "=" + HyperparameterCell(value);
  }
  return out.empty() ? "-" : out;
}

// "10 steps: 4 trials (4 planned), 2 promoted, cut 0.81"; the plan of a preview has no counts.
std::string RungCell(const api::RungInfo& r, bool live) {
  std::string out = std::to_string(r.steps) + " steps: ";
  if (!live) return out + std::to_string(r.max_trials) + " trials planned";
  out += std::to_string(r.trials) + " trials (" + std::to_string(r.max_trials) + " planned), " +
         std::to_string(r.promoted) + " promoted";
  if (r.cut) out += ", cut " + FormatNumber(*r.cut);
  return out;
}

// "rung 1", or "bracket 2 rung 1" when the plan has more than one bracket.
std::string RungName(const api::ExperimentPlan& plan, const api::RungInfo& r) {
  const bool brackets = std::any_of(plan.rungs.begin(), plan.rungs.end(),
                                    [](const api::RungInfo& x) { return x.bracket > 0; });
  return (brackets ? "bracket " + std::to_string(r.bracket) + " rung " : std::string("rung ")) +
         std::to_string(r.index);
}

// Prints one experiment (the API's object as it came, `doc`) in the output mode.
int PrintExperiment(const Client& c, const json& doc) {
  auto e = api::ExperimentFromJson(doc);
  if (!e.ok()) return c.Fail({kExitFailed, "the daemon's answer: " + e.status().message()});
  return PrintObject(c, doc, e->id, {ExperimentHeader(), {ExperimentRow(*e)}, 2});
}

int PrintPlan(const Client& c, const json& doc) {
  auto plan = api::PlanFromJson(doc);
  if (!plan.ok()) return c.Fail({kExitFailed, "the daemon's answer: " + plan.status().message()});
  if (c.mode() == OutputMode::kJson || c.mode() == OutputMode::kJsonl) {
    PrintJson(doc, doc, c.mode());
    return 0;
  }
  Table t{{"FIELD", "VALUE"}, {}, -1};
  t.rows.push_back({"trials", std::to_string(plan->trials)});
  if (plan->grid_size > 0) t.rows.push_back({"grid size", std::to_string(plan->grid_size)});
  t.rows.push_back({"total steps", std::to_string(plan->max_total_steps)});
  for (const api::RungInfo& r : plan->rungs) {
    t.rows.push_back({RungName(*plan, r), RungCell(r, false)});
  }
  for (size_t i = 0; i < plan->first_trials.size(); ++i) {
    t.rows.push_back({"trial " + std::to_string(i), HyperparameterList(plan->first_trials[i])});
  }
  PrintTable(c, t);
  return 0;
}

// After a follow that ended: the experiment as it ended, then the follow's exit code.
int PrintEnded(const Client& c, const json& final, int code) {
  if (!final.is_null() && PrintExperiment(c, final) != 0) return kExitFailed;
  return code;
}

int Submit(const std::vector<std::string>& args) {
  ClientOptions o;
  std::vector<std::string> files, sets;
  bool follow = false, preview = false;
  Flags flags("experiments submit", "SPEC.json",
              "Checks the experiment spec here with the daemon's own parser (exit 2 naming the\n"
              "field), then submits it and prints the experiment. SPEC.json may be - for stdin.\n"
              "--preview prints its plan instead (POST /api/v1/experiments/preview).\n");
  flags.Positionals("spec file", 1, &files)
      .Add("--set", "PATH=VALUE", "change a field first (repeatable): --set searcher.max_trials=8",
           [&](const std::string& v) -> std::optional<std::string> {
             sets.push_back(v);
             return std::nullopt;
           })
      .Switch("--preview", "print the plan (rungs, steps, first trials); run nothing", &preview)
      .Switch("-f", "follow it to its end, a line per change; exit with how it ended", &follow)
      .Switch("--follow", "the same as -f", &follow);
  AddClientFlags(flags, &o);
  return WithClient("experiments submit", flags, o, args, [&](Client& c) -> int {
    if (files.size() != 1) return NeedOne("experiments submit", "spec file", files, flags);
    if (preview && (follow || c.mode() == OutputMode::kQuiet)) {
      return c.Fail({kExitUsage, "--preview: not with -f or -q"});
    }
    Failure f;
    auto doc = ReadSpec(files[0], sets, &f);
    if (!doc) return c.Fail(f);
    api::FieldError field;
    if (auto spec = api::ExperimentSpecFromJson(*doc, &field); !spec.ok()) {
      return c.Fail({kExitUsage, "invalid spec: " + field.message});
    }
    const std::string target = preview ? "/api/v1/experiments/preview" : "/api/v1/experiments";
    auto answer = c.Call("POST", target, &f, doc->dump(), /*invalid_is_usage=*/true);
    if (!answer) return c.Fail(f);
    if (preview) return PrintPlan(c, *answer);
    if (!follow) return PrintExperiment(c, *answer);
    const std::string id = AnnounceSubmitted(c, *answer, "experiment");
    ExperimentFollowOptions fo;
    fo.print_changes = c.mode() != OutputMode::kQuiet;
    return FollowExperiment(c, id, fo, nullptr);
  });
}

int List(const std::vector<std::string>& args) {
  ClientOptions o;
  std::string state;
  int64_t limit = 50;
  Flags flags("experiments list", "", "The experiments, newest first (all pages up to --limit).\n");
  flags.String("--state", "S", "running, stopping, completed, failed or stopped", &state)
      .Int("--limit", "at most N experiments (50)", 1, 1000000, &limit);
  AddClientFlags(flags, &o);
  return WithClient("experiments list", flags, o, args, [&](Client& c) -> int {
    if (!state.empty() && !api::ParseExperimentState(state)) {
      return c.Fail({kExitUsage, "--state: unknown state '" + state + "'"});
    }
    json all;
    std::vector<api::ExperimentInfo> experiments;
    Failure f;
    const bool read = ReadPages(
        c, "/api/v1/experiments", "experiments", state, limit,
        [](const json& doc, std::string* next) -> engine::Result<std::vector<api::ExperimentInfo>> {
          auto page = api::ExperimentPageFromJson(doc);
          if (!page.ok()) return page.status();
          *next = page->next_cursor;
          return std::move(page->experiments);
        },
        &all, &experiments, &f);
    if (!read) return c.Fail(f);
    switch (c.mode()) {
      case OutputMode::kQuiet:
        for (const auto& e : experiments) std::printf("%s\n", e.id.c_str());
        return 0;
      case OutputMode::kJson:
      case OutputMode::kJsonl:
        PrintJson(json{{"experiments", all}}, all, c.mode());
        return 0;
      default: {
        Table t{ExperimentHeader(), {}, 2};
        for (const auto& e : experiments) t.rows.push_back(ExperimentRow(e));
        PrintTable(c, t);
        return 0;
      }
    }
  });
}

int Get(const std::vector<std::string>& args) {
  ClientOptions o;
  std::vector<std::string> ids;
  Flags flags("experiments get", "ID",
              "One experiment: state, progress, budget, the best trial and its hyperparameters,\n"
              "disk, the rung ladder; -o json has its canonical spec.\n");
  flags.Positionals(kNoun, 1, &ids);
  AddClientFlags(flags, &o);
  return WithClient("experiments get", flags, o, args, [&](Client& c) -> int {
    if (ids.size() != 1) return NeedOne("experiments get", kNoun, ids, flags);
    Failure f;
    auto doc = c.Call("GET", ExperimentPath(ids[0]), &f);
    if (!doc) return c.Fail(f);
    if (c.mode() != OutputMode::kTable) return PrintExperiment(c, *doc);
    auto e = api::ExperimentFromJson(*doc);
    if (!e.ok()) return c.Fail({kExitFailed, "the daemon's answer: " + e.status().message()});
    Table t{{"FIELD", "VALUE"}, {}, -1};
    const auto row = [&](const std::string& k, const std::string& v) { t.rows.push_back({k, v}); };
    row("id", e->id);
    row("name", e->name);
    row("state", api::ExperimentStateName(e->state));
    row("searcher", e->searcher);
    row("metric", e->metric + " (" + (e->maximize ? "max" : "min") + ")");
    row("trials",
        std::to_string(e->trials_started) + "/" + std::to_string(e->max_trials) + " started");
    for (const auto& [state, count] : e->trials_by_state) {
      if (count > 0) row("trials " + state, std::to_string(count));
    }
    row("steps", std::to_string(e->steps_used) +
                     (e->budget_max_steps > 0 ? "/" + std::to_string(e->budget_max_steps) : ""));
    row("seconds",
        FormatNumber(e->seconds_used) +
            (e->budget_max_seconds > 0 ? "/" + FormatNumber(e->budget_max_seconds) : ""));
    if (e->best) {
      row("best trial", std::to_string(e->best->index));
      row("best job", e->best->job_id);
      row("best " + e->metric,
          FormatNumber(e->best->metric) + " at step " + std::to_string(e->best->step));
      for (const auto& [path, value] : e->best->hyperparameters) {
        row("best " + path, HyperparameterCell(value));
      }
    } else {
      row("best trial", "-");
    }
    if (e->cross_validation) {
      // Each fold's metric, then their mean and sample standard deviation.
      const api::CrossValidationInfo& cv = *e->cross_validation;
      row("folds", std::to_string(cv.folds_done) + "/" + std::to_string(cv.folds) + " done" +
                       (cv.stratified ? ", stratified" : ""));
      for (size_t k = 0; k < cv.fold_metrics.size(); ++k) {
        row("fold " + std::to_string(k) + " " + e->metric,
            cv.fold_metrics[k] ? FormatNumber(*cv.fold_metrics[k]) : std::string("-"));
      }
      row("mean " + e->metric, cv.mean ? FormatNumber(*cv.mean) : std::string("-"));
      row("std " + e->metric + " (sample)", cv.std ? FormatNumber(*cv.std) : std::string("-"));
    }
    row("disk bytes", std::to_string(e->disk_bytes));
    row("peak disk bytes", std::to_string(e->peak_disk_bytes));
    for (const api::RungInfo& r : e->plan.rungs) {
      row(RungName(e->plan, r), RungCell(r, true));
    }
    row("created", FormatTime(e->created_at));
    row("finished", FormatTime(e->finished_at));
    if (!e->reason.empty()) row("reason", e->reason);
    if (!e->error.empty()) row("error", e->error);
    PrintTable(c, t);
    return 0;
  });
}

int Trials(const std::vector<std::string>& args) {
  ClientOptions o;
  std::vector<std::string> ids;
  std::string sort = "index", state;
  bool desc = false;
  int64_t limit = 100;
  Flags flags("experiments trials", "ID",
              "The experiment's trials, a column per hyperparameter; -q prints their job ids.\n");
  flags.Positionals(kNoun, 1, &ids)
      .String("--sort", "KEY", "index, metric, state, global_step or a path of the space (index)",
              &sort)
      .Switch("--desc", "descending", &desc)
      .String("--state", "S", "running, waiting, pruned, completed, failed or stopped", &state)
      .Int("--limit", "at most N trials (100)", 1, 1000000, &limit);
  AddClientFlags(flags, &o);
  return WithClient("experiments trials", flags, o, args, [&](Client& c) -> int {
    if (ids.size() != 1) return NeedOne("experiments trials", kNoun, ids, flags);
    if (!state.empty() && !api::ParseTrialState(state)) {
      return c.Fail({kExitUsage, "--state: unknown state '" + state + "'"});
    }
    json all = json::array();
    json whole;  // the first page's answer, with every page's trials (-o json)
    std::vector<api::TrialInfo> trials;
    while (static_cast<int64_t>(trials.size()) < limit) {
      std::string target =
          ExperimentPath(ids[0]) + "/trials?sort=" + Encode(sort) +
          "&order=" + (desc ? "desc" : "asc") + "&offset=" + std::to_string(trials.size()) +
          "&limit=" + std::to_string(std::min<int64_t>(limit - trials.size(), api::kMaxTrialPage));
      if (!state.empty()) target += "&state=" + state;
      Failure f;
      // A bad --sort is the daemon's to name (400): a usage error.
      auto doc = c.Call("GET", target, &f, {}, /*invalid_is_usage=*/true);
      if (!doc) return c.Fail(f);
      auto page = api::TrialPageFromJson(*doc);
      if (!page.ok()) {
        return c.Fail({kExitFailed, "the daemon's answer: " + page.status().message()});
      }
      for (size_t i = 0; i < page->trials.size(); ++i) {
        all.push_back((*doc)["trials"][i]);
        trials.push_back(page->trials[i]);
      }
      if (whole.is_null()) whole = std::move(*doc);
      if (page->trials.empty() || static_cast<int64_t>(trials.size()) >= page->total) break;
    }
    switch (c.mode()) {
      case OutputMode::kQuiet:
        for (const auto& t : trials) std::printf("%s\n", t.job_id.c_str());
        return 0;
      case OutputMode::kJson:
      case OutputMode::kJsonl:
        whole["trials"] = all;
        whole["limit"] = limit;
        PrintJson(whole, all, c.mode());
        return 0;
      default:
        break;
    }
    // The columns: the trials' fields, then each hyperparameter's path in the space's order.
    std::vector<std::string> paths;
    for (const auto& t : trials) {
      for (const auto& [path, value] : t.hyperparameters) {
        if (std::find(paths.begin(), paths.end(), path) == paths.end()) paths.push_back(path);
      }
    }
    Table table{{"INDEX", "JOB", "STATE", "RUNG", "STEP", "METRIC"}, {}, 2};
    table.header.insert(table.header.end(), paths.begin(), paths.end());
    for (const auto& t : trials) {
      std::vector<std::string> row = {
          std::to_string(t.index),       t.job_id,
          api::TrialStateName(t.state),  t.rung < 0 ? "-" : std::to_string(t.rung),
          std::to_string(t.global_step), t.metric ? FormatNumber(*t.metric) : "-"};
      for (const std::string& path : paths) {
        std::string cell = "-";
        for (const auto& [p, value] : t.hyperparameters) {
          if (p == path) cell = HyperparameterCell(value);
        }
        row.push_back(cell);
      }
      table.rows.push_back(std::move(row));
    }
    PrintTable(c, table);
    return 0;
  });
}

int Wait(const std::vector<std::string>& args) {
  ClientOptions o;
  std::vector<std::string> ids;
  std::string timeout;
  bool follow = false;
  Flags flags("experiments wait", "ID",
              "Waits until the experiment ends and prints it; exits 0 completed, 1 failed,\n"
              "3 stopped, 124 when --timeout runs out (the experiment keeps running).\n");
  flags.Positionals(kNoun, 1, &ids)
      .String("--timeout", "DUR", "give up after DUR: 90s, 500ms, 10m, 2h (none)", &timeout)
      .Switch("-f", "a line per change while waiting", &follow)
      .Switch("--follow", "the same as -f", &follow);
  AddClientFlags(flags, &o);
  return WithClient("experiments wait", flags, o, args, [&](Client& c) -> int {
    if (ids.size() != 1) return NeedOne("experiments wait", kNoun, ids, flags);
    Failure f;
    const auto deadline = TimeoutDeadline(timeout, &f);
    if (!deadline) return c.Fail(f);
    ExperimentFollowOptions fo;
    fo.deadline = *deadline;
    fo.print_changes = follow && c.mode() != OutputMode::kQuiet;
    json final;
    const int code = FollowExperiment(c, ids[0], fo, &final);
    return PrintEnded(c, final, code);
  });
}

int Stop(const std::vector<std::string>& args) {
  ClientOptions o;
  std::vector<std::string> ids;
  bool wait = false;
  Flags flags("experiments stop", "ID",
              "Stops the experiment: each running trial saves a final checkpoint, then it is\n"
              "stopped; `resume` goes on where it was.\n");
  flags.Positionals(kNoun, 1, &ids)
      .Switch("--wait", "wait until it has stopped; exit with how it ended", &wait);
  AddClientFlags(flags, &o);
  return WithClient("experiments stop", flags, o, args, [&](Client& c) -> int {
    if (ids.size() != 1) return NeedOne("experiments stop", kNoun, ids, flags);
    Failure f;
    auto doc = c.Call("POST", ExperimentPath(ids[0]) + "/stop", &f, "{}");
    if (!doc) return c.Fail(f);
    if (!wait) return PrintExperiment(c, *doc);
    json final;
    const int code = FollowExperiment(c, ids[0], ExperimentFollowOptions{}, &final);
    return PrintEnded(c, final, code);
  });
}

int Resume(const std::vector<std::string>& args) {
  ClientOptions o;
  std::vector<std::string> ids;
  bool follow = false;
  Flags flags("experiments resume", "ID",
              "A stopped or failed experiment goes on where it was: its stopped trials resume\n"
              "from their checkpoints.\n");
  flags.Positionals(kNoun, 1, &ids)
      .Switch("-f", "follow it to its end, a line per change", &follow)
      .Switch("--follow", "the same as -f", &follow);
  AddClientFlags(flags, &o);
  return WithClient("experiments resume", flags, o, args, [&](Client& c) -> int {
    if (ids.size() != 1) return NeedOne("experiments resume", kNoun, ids, flags);
    Failure f;
    auto doc = c.Call("POST", ExperimentPath(ids[0]) + "/resume", &f, "{}");
    if (!doc) return c.Fail(f);
    if (!follow) return PrintExperiment(c, *doc);
    ExperimentFollowOptions fo;
    fo.print_changes = c.mode() != OutputMode::kQuiet;
    return FollowExperiment(c, ids[0], fo, nullptr);
  });
}

int Delete(const std::vector<std::string>& args) {
  ClientOptions o;
  std::vector<std::string> ids;
  bool yes = false;
  Flags flags("experiments delete", "ID",
              "Deletes an experiment that is not running or stopping, with its trials' jobs,\n"
              "checkpoints, logs and series. Asks first on a terminal; elsewhere needs --yes.\n");
  flags.Positionals(kNoun, 1, &ids).Switch("--yes", "do not ask", &yes);
  AddClientFlags(flags, &o);
  return WithClient("experiments delete", flags, o, args, [&](Client& c) -> int {
    if (ids.size() != 1) return NeedOne("experiments delete", kNoun, ids, flags);
    return DeleteResource(c, ExperimentPath(ids[0]), ids[0],
                          "experiment " + ids[0] + " and all its trials", yes);
  });
}

}  // namespace experiment_verbs

int ExperimentsCommand(const std::vector<std::string>& args) {
  static const std::map<std::string, client::Verb> kVerbs = {
      {"submit", experiment_verbs::Submit}, {"list", experiment_verbs::List},
      {"get", experiment_verbs::Get},       {"trials", experiment_verbs::Trials},
      {"wait", experiment_verbs::Wait},     {"stop", experiment_verbs::Stop},
      {"resume", experiment_verbs::Resume}, {"delete", experiment_verbs::Delete}};
  return client::RunVerb("experiments", kVerbs, experiment_verbs::kExperimentsUsage, args);
}

}  // namespace trainingd::daemon
