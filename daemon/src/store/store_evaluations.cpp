// Each job's latest evaluation of each split (docs/storage.md#evaluations): StoreWriter's write
// and the read.
#include "store/store_evaluations.h"

#include "store/store_writer.h"

namespace trainingd::daemon {
namespace {

// Only for a job that is still there: a deleted job leaves no evaluation behind.
constexpr char kPutEvaluation[] = R"sql(
INSERT INTO evaluations (job_id, split, step, wall_time, body_json)
SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS (SELECT 1 FROM jobs WHERE id = ?1)
ON CONFLICT (job_id, split) DO UPDATE SET
  step = excluded.step, wall_time = excluded.wall_time, body_json = excluded.body_json)sql";

// ?2 = '' picks the latest of any split.
constexpr char kGetEvaluation[] = R"sql(
SELECT job_id, split, step, wall_time, body_json FROM evaluations
WHERE job_id = ?1 AND (?2 = '' OR split = ?2) ORDER BY wall_time DESC, split LIMIT 1)sql";

}  // namespace

engine::Status StoreWriter::Do(PutEvaluationOp& op) {
  const EvaluationRecord& e = op.evaluation;
  if (e.job_id.empty() || e.split.empty()) {
    return engine::Status::InvalidArgument("an evaluation to store needs a job id and a split");
  }
  return RunOne(kPutEvaluation, "storing the " + e.split + " evaluation of job '" + e.job_id + "'",
                [&](sqlite::Stmt& s) {
                  s.Bind(1, e.job_id);
                  s.Bind(2, e.split);
                  s.Bind(3, e.step);
                  s.Bind(4, e.wall_time);
                  s.Bind(5, e.body_json);
                });
}

engine::Result<std::optional<EvaluationRecord>> QueryEvaluation(sqlite::Db& db,
                                                                const std::string& job_id,
                                                                const std::string& split) {
  auto stmt = db.Prepare(kGetEvaluation);
  if (!stmt.ok()) return stmt.status();
  sqlite::Stmt& s = **stmt;
  sqlite::ResetOnExit reset(s);
  s.Bind(1, job_id);
  s.Bind(2, split);
  const int rc = s.Step();
  if (rc == SQLITE_DONE) return std::optional<EvaluationRecord>();
  if (rc != SQLITE_ROW) return db.Error(rc, "reading an evaluation of job '" + job_id + "'");
  EvaluationRecord e;
  e.job_id = s.Text(0);
  e.split = s.Text(1);
  e.step = s.Int(2);
  e.wall_time = s.Real(3);
  e.body_json = s.Text(4);
  return std::optional<EvaluationRecord>(std::move(e));
}

}  // namespace trainingd::daemon
