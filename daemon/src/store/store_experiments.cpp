// The experiments' rows (docs/storage.md#experiments): StoreWriter's writes and the reads.
// States are stored by the API's names (api::ExperimentStateName, TrialStateName), which the
// schema fixes from version 6 on.
#include "store/store_experiments.h"

#include <string_view>
#include <utility>

#include "store/store_writer.h"

namespace trainingd::daemon {
namespace {

using engine::Status;

constexpr char kPutExperiment[] = R"sql(
INSERT INTO experiments (id, name, spec_json, state, created_at, finished_at, error, reason,
                         seconds_used, run_started_at, peak_disk_bytes, owner)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
ON CONFLICT (id) DO UPDATE SET
  name = excluded.name, spec_json = excluded.spec_json, state = excluded.state,
  created_at = excluded.created_at, finished_at = excluded.finished_at, error = excluded.error,
  reason = excluded.reason, seconds_used = excluded.seconds_used,
  run_started_at = excluded.run_started_at, peak_disk_bytes = excluded.peak_disk_bytes,
  owner = excluded.owner)sql";

constexpr char kPutTrial[] = R"sql(
INSERT INTO trials (experiment_id, trial_index, job_id, hyperparameters_json, seed, state,
                    target_steps, restarts, reason, checkpoints_kept, created_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
ON CONFLICT (experiment_id, trial_index) DO UPDATE SET
  job_id = excluded.job_id, hyperparameters_json = excluded.hyperparameters_json,
  seed = excluded.seed, state = excluded.state, target_steps = excluded.target_steps,
  restarts = excluded.restarts, reason = excluded.reason,
  checkpoints_kept = excluded.checkpoints_kept, created_at = excluded.created_at)sql";

constexpr char kPutRungResult[] = R"sql(
INSERT OR REPLACE INTO rung_results (experiment_id, trial_index, rung, step, metric, recorded_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6))sql";

constexpr char kAddDecision[] = R"sql(
INSERT INTO experiment_decisions (experiment_id, at, kind, trial_index, rung, detail)
VALUES (?1, ?2, ?3, ?4, ?5, ?6))sql";

constexpr char kDeleteExperimentDecisions[] =
    "DELETE FROM experiment_decisions WHERE experiment_id = ?1";
constexpr char kDeleteExperimentResults[] = "DELETE FROM rung_results WHERE experiment_id = ?1";
constexpr char kDeleteExperimentTrials[] = "DELETE FROM trials WHERE experiment_id = ?1";
constexpr char kDeleteExperiment[] = "DELETE FROM experiments WHERE id = ?1";

constexpr char kListExperiments[] = R"sql(
SELECT id, name, spec_json, state, created_at, finished_at, error, reason, seconds_used,
       run_started_at, peak_disk_bytes, owner
FROM experiments ORDER BY created_at, id)sql";

// ?1 = '' lists every experiment's.
constexpr char kListTrials[] = R"sql(
SELECT experiment_id, trial_index, job_id, hyperparameters_json, seed, state, target_steps,
       restarts, reason, checkpoints_kept, created_at
FROM trials WHERE ?1 = '' OR experiment_id = ?1 ORDER BY experiment_id, trial_index)sql";

constexpr char kListRungResults[] = R"sql(
SELECT experiment_id, trial_index, rung, step, metric, recorded_at
FROM rung_results WHERE ?1 = '' OR experiment_id = ?1
ORDER BY experiment_id, trial_index, rung)sql";

constexpr char kListDecisions[] = R"sql(
SELECT seq, experiment_id, at, kind, trial_index, rung, detail FROM (
  SELECT * FROM experiment_decisions WHERE experiment_id = ?1 ORDER BY seq DESC LIMIT ?2)
ORDER BY seq)sql";

// Reads every row `sql` gives (with ?1 = key, ?2 = limit when given) through `read`.
template <typename Record, typename Read>
engine::Result<std::vector<Record>> ReadAll(sqlite::Db& db, const char* sql, std::string_view key,
                                            int64_t limit, std::string_view what, Read&& read) {
  auto stmt = db.Prepare(sql);
  if (!stmt.ok()) return stmt.status();
  sqlite::Stmt& s = **stmt;
  sqlite::ResetOnExit reset(s);
  s.Bind(1, key);
  if (limit > 0) s.Bind(2, limit);
  return sqlite::ReadRows<Record>(db, s, what, std::forward<Read>(read));
}

Status UnknownState(const sqlite::Db& db, std::string_view what, const std::string& state) {
  return Status::DataLoss(db.path() + ": " + std::string(what) + " has an unknown state '" + state +
                          "'");
}

}  // namespace

Status StoreWriter::Do(PutExperimentOp& op) {
  const ExperimentRecord& e = op.experiment;
  if (e.id.empty()) return Status::InvalidArgument("id of an experiment to store must be given");
  return RunOne(kPutExperiment, "storing experiment '" + e.id + "'", [&](sqlite::Stmt& s) {
    s.Bind(1, e.id);
    s.Bind(2, e.name);
    s.Bind(3, e.spec_json);
    s.Bind(4, std::string_view(api::ExperimentStateName(e.state)));
    s.Bind(5, e.created_at);
    s.Bind(6, e.finished_at);
    s.Bind(7, e.error);
    s.Bind(8, e.reason);
    s.Bind(9, e.seconds_used);
    s.Bind(10, e.run_started_at);
    s.Bind(11, e.peak_disk_bytes);
    s.Bind(12, e.owner);
  });
}

Status StoreWriter::Do(PutTrialOp& op) {
  const TrialRecord& t = op.trial;
  return RunOne(
      kPutTrial,
      "storing trial " + std::to_string(t.index) + " of experiment '" + t.experiment_id + "'",
      [&](sqlite::Stmt& s) {
        s.Bind(1, t.experiment_id);
        s.Bind(2, t.index);
        s.Bind(3, t.job_id);
        s.Bind(4, t.hyperparameters_json);
        s.Bind(5, static_cast<int64_t>(t.seed));
        s.Bind(6, std::string_view(api::TrialStateName(t.state)));
        s.Bind(7, t.target_steps);
        s.Bind(8, t.restarts);
        s.Bind(9, t.reason);
        s.Bind(10, int64_t{t.checkpoints_kept ? 1 : 0});
        s.Bind(11, t.created_at);
      });
}

Status StoreWriter::Do(PutRungResultOp& op) {
  const RungResultRecord& r = op.result;
  return RunOne(kPutRungResult, "storing a rung result of experiment '" + r.experiment_id + "'",
                [&](sqlite::Stmt& s) {
                  s.Bind(1, r.experiment_id);
                  s.Bind(2, r.trial_index);
                  s.Bind(3, int64_t{r.rung});
                  s.Bind(4, r.step);
                  s.Bind(5, r.metric);
                  s.Bind(6, r.recorded_at);
                });
}

Status StoreWriter::Do(AddDecisionOp& op) {
  const DecisionRecord& d = op.decision;
  return RunOne(kAddDecision, "storing a decision of experiment '" + d.experiment_id + "'",
                [&](sqlite::Stmt& s) {
                  s.Bind(1, d.experiment_id);
                  s.Bind(2, d.at);
                  s.Bind(3, d.kind);
                  s.Bind(4, d.trial_index);
                  s.Bind(5, int64_t{d.rung});
                  s.Bind(6, d.detail);
                });
}

Status StoreWriter::Do(DeleteExperimentOp& op) {
  for (const char* sql : {kDeleteExperimentDecisions, kDeleteExperimentResults,
                          kDeleteExperimentTrials, kDeleteExperiment}) {
    TRAININGD_RETURN_IF_ERROR(RunOne(sql, "deleting experiment '" + op.id + "'",
                                     [&](sqlite::Stmt& s) { s.Bind(1, op.id); }));
  }
  return Status::Ok();
}

engine::Result<std::vector<ExperimentRecord>> QueryExperiments(sqlite::Db& db) {
  return ReadAll<ExperimentRecord>(db, kListExperiments, "", 0, "listing experiments",
                                   [&](const sqlite::Stmt& s) -> engine::Result<ExperimentRecord> {
                                     ExperimentRecord e;
                                     e.id = s.Text(0);
                                     e.name = s.Text(1);
                                     e.spec_json = s.Text(2);
                                     const std::string state = s.Text(3);
                                     const auto parsed = api::ParseExperimentState(state);
                                     if (!parsed)
                                       return UnknownState(db, "experiment '" + e.id + "'", state);
                                     e.state = *parsed;
                                     e.created_at = s.Real(4);
                                     e.finished_at = s.Real(5);
                                     e.error = s.Text(6);
                                     e.reason = s.Text(7);
                                     e.seconds_used = s.Real(8);
                                     e.run_started_at = s.Real(9);
                                     e.peak_disk_bytes = s.Int(10);
                                     e.owner = s.Text(11);
                                     return e;
                                   });
}

engine::Result<std::vector<TrialRecord>> QueryTrials(sqlite::Db& db,
                                                     const std::string& experiment_id) {
  return ReadAll<TrialRecord>(
      db, kListTrials, experiment_id, 0, "listing trials",
      [&](const sqlite::Stmt& s) -> engine::Result<TrialRecord> {
        TrialRecord t;
        t.experiment_id = s.Text(0);
        t.index = s.Int(1);
        t.job_id = s.Text(2);
        t.hyperparameters_json = s.Text(3);
        t.seed = static_cast<uint64_t>(s.Int(4));
        const std::string state = s.Text(5);
        const auto parsed = api::ParseTrialState(state);
        if (!parsed) {
          return UnknownState(
              db, "trial " + std::to_string(t.index) + " of '" + t.experiment_id + "'", state);
        }
        t.state = *parsed;
        t.target_steps = s.Int(6);
        t.restarts = s.Int(7);
        t.reason = s.Text(8);
        t.checkpoints_kept = s.Int(9) != 0;
        t.created_at = s.Real(10);
        return t;
      });
}

engine::Result<std::vector<RungResultRecord>> QueryRungResults(sqlite::Db& db,
                                                               const std::string& experiment_id) {
  return ReadAll<RungResultRecord>(db, kListRungResults, experiment_id, 0, "listing rung results",
                                   [](const sqlite::Stmt& s) -> engine::Result<RungResultRecord> {
                                     RungResultRecord r;
                                     r.experiment_id = s.Text(0);
                                     r.trial_index = s.Int(1);
                                     r.rung = static_cast<int>(s.Int(2));
                                     r.step = s.Int(3);
                                     r.metric = s.Real(4);
                                     r.recorded_at = s.Real(5);
                                     return r;
                                   });
}

engine::Result<std::vector<DecisionRecord>> QueryDecisions(sqlite::Db& db,
                                                           const std::string& experiment_id,
                                                           int64_t limit) {
  return ReadAll<DecisionRecord>(db, kListDecisions, experiment_id, limit, "listing decisions",
                                 [](const sqlite::Stmt& s) -> engine::Result<DecisionRecord> {
                                   DecisionRecord d;
                                   d.seq = s.Int(0);
                                   d.experiment_id = s.Text(1);
                                   d.at = s.Real(2);
                                   d.kind = s.Text(3);
                                   d.trial_index = s.Int(4);
                                   d.rung = static_cast<int>(s.Int(5));
                                   d.detail = s.Text(6);
                                   return d;
                                 });
}

}  // namespace trainingd::daemon
