#include "store/store_schema.h"

#include <algorithm>
#include <iterator>
#include <string>

namespace trainingd::daemon {
namespace {

using engine::Status;

// Migration i takes the database from user_version i to i + 1. Never edit one that has shipped:
// append a new one.
constexpr const char* kMigrations[] = {
    // 1: jobs, scalars, and the scalar rollups that make downsampled queries fast.
    R"sql(
CREATE TABLE jobs (
  id TEXT PRIMARY KEY NOT NULL,
  name TEXT NOT NULL DEFAULT '',
  spec_json TEXT NOT NULL DEFAULT '',
  state TEXT NOT NULL,
  created_at REAL NOT NULL DEFAULT 0,
  started_at REAL NOT NULL DEFAULT 0,
  finished_at REAL NOT NULL DEFAULT 0,
  global_step INTEGER NOT NULL DEFAULT 0,
  max_steps INTEGER NOT NULL DEFAULT 0,
  error TEXT NOT NULL DEFAULT '',
  reason TEXT NOT NULL DEFAULT '',
  checkpoint_dir TEXT NOT NULL DEFAULT ''
);
CREATE INDEX jobs_by_created_at ON jobs (created_at, id);
CREATE INDEX jobs_by_state ON jobs (state, created_at, id);

CREATE TABLE scalars (
  job_id TEXT NOT NULL,
  tag TEXT NOT NULL,
  step INTEGER NOT NULL,
  wall_time REAL NOT NULL,
  value REAL,
  PRIMARY KEY (job_id, tag, step)
) WITHOUT ROWID;

CREATE TABLE scalar_rollups (
  job_id TEXT NOT NULL,
  tag TEXT NOT NULL,
  level INTEGER NOT NULL,
  block INTEGER NOT NULL,
  min_value REAL,
  max_value REAL,
  last_step INTEGER NOT NULL,
  last_wall_time REAL NOT NULL,
  last_value REAL,
  PRIMARY KEY (job_id, tag, level, block)
) WITHOUT ROWID;

PRAGMA application_id = 1953656420;
)sql",
    // 2: a series table gives each (job, tag) an integer id; points and rollups are keyed by it.
    // Comparing two integers instead of two strings per B-tree step doubles the ingest rate
    // (docs/storage.md). Series ids are handed out in (job, tag) order and the points copied in
    // key order, so the copies append.
    R"sql(
CREATE TABLE series (
  id INTEGER PRIMARY KEY,
  job_id TEXT NOT NULL,
  tag TEXT NOT NULL,
  UNIQUE (job_id, tag)
);

CREATE TABLE scalars_v2 (
  series_id INTEGER NOT NULL,
  step INTEGER NOT NULL,
  wall_time REAL NOT NULL,
  value REAL,
  PRIMARY KEY (series_id, step)
) WITHOUT ROWID;

CREATE TABLE scalar_rollups_v2 (
  series_id INTEGER NOT NULL,
  level INTEGER NOT NULL,
  block INTEGER NOT NULL,
  min_value REAL,
  max_value REAL,
  last_step INTEGER NOT NULL,
  last_wall_time REAL NOT NULL,
  last_value REAL,
  PRIMARY KEY (series_id, level, block)
) WITHOUT ROWID;

INSERT INTO series (job_id, tag) SELECT DISTINCT job_id, tag FROM scalars ORDER BY job_id, tag;

INSERT INTO scalars_v2 (series_id, step, wall_time, value)
SELECT s.id, p.step, p.wall_time, p.value
FROM scalars AS p JOIN series AS s ON s.job_id = p.job_id AND s.tag = p.tag
ORDER BY s.id, p.step;

INSERT INTO scalar_rollups_v2 (series_id, level, block, min_value, max_value, last_step,
                               last_wall_time, last_value)
SELECT s.id, r.level, r.block, r.min_value, r.max_value, r.last_step, r.last_wall_time,
       r.last_value
FROM scalar_rollups AS r JOIN series AS s ON s.job_id = r.job_id AND s.tag = r.tag
ORDER BY s.id, r.level, r.block;

DROP TABLE scalars;
DROP TABLE scalar_rollups;
ALTER TABLE scalars_v2 RENAME TO scalars;
ALTER TABLE scalar_rollups_v2 RENAME TO scalar_rollups;
)sql",
    // 3: how many times in a row the daemon died while a job ran (crash containment,
    // docs/operations.md).
    R"sql(
ALTER TABLE jobs ADD COLUMN crash_count INTEGER NOT NULL DEFAULT 0;
)sql",
    // 4: the attempts of data-parallel jobs (the MpiExecutor relaunches a job whose ranks died
    // or stalled, docs/distributed.md#supervision), numbered over all of a job's runs.
    R"sql(
CREATE TABLE attempts (
  job_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  workers INTEGER NOT NULL,
  from_step INTEGER NOT NULL,
  started_at REAL NOT NULL,
  ended_at REAL NOT NULL DEFAULT 0,
  end_reason TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (job_id, attempt)
) WITHOUT ROWID;
)sql",
    // 5: the Slurm job id of a job's latest run on a cluster (docs/slurm.md).
    R"sql(
ALTER TABLE jobs ADD COLUMN slurm_job_id INTEGER NOT NULL DEFAULT 0;
)sql",
    // 6: experiments (hyperparameter search, docs/experiments.md): their rows, trials, rung
    // results and decisions; a job that is a trial names its experiment.
    R"sql(
ALTER TABLE jobs ADD COLUMN experiment_id TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN trial_index INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN hyperparameters_json TEXT NOT NULL DEFAULT '';

CREATE TABLE experiments (
  id TEXT PRIMARY KEY NOT NULL,
  name TEXT NOT NULL DEFAULT '',
  spec_json TEXT NOT NULL DEFAULT '',
  state TEXT NOT NULL,
  created_at REAL NOT NULL DEFAULT 0,
  finished_at REAL NOT NULL DEFAULT 0,
  error TEXT NOT NULL DEFAULT '',
  reason TEXT NOT NULL DEFAULT '',
  seconds_used REAL NOT NULL DEFAULT 0,
  run_started_at REAL NOT NULL DEFAULT 0,
  peak_disk_bytes INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE trials (
  experiment_id TEXT NOT NULL,
  trial_index INTEGER NOT NULL,
  job_id TEXT NOT NULL,
  hyperparameters_json TEXT NOT NULL,
  seed INTEGER NOT NULL,
  state TEXT NOT NULL,
  target_steps INTEGER NOT NULL,
  restarts INTEGER NOT NULL DEFAULT 0,
  reason TEXT NOT NULL DEFAULT '',
  checkpoints_kept INTEGER NOT NULL DEFAULT 1,
  created_at REAL NOT NULL DEFAULT 0,
  PRIMARY KEY (experiment_id, trial_index)
) WITHOUT ROWID;

CREATE TABLE rung_results (
  experiment_id TEXT NOT NULL,
  trial_index INTEGER NOT NULL,
  rung INTEGER NOT NULL,
  step INTEGER NOT NULL,
  metric REAL,
  recorded_at REAL NOT NULL,
  PRIMARY KEY (experiment_id, trial_index, rung)
) WITHOUT ROWID;

CREATE TABLE experiment_decisions (
  seq INTEGER PRIMARY KEY,
  experiment_id TEXT NOT NULL,
  at REAL NOT NULL,
  kind TEXT NOT NULL,
  trial_index INTEGER NOT NULL,
  rung INTEGER NOT NULL,
  detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX experiment_decisions_by_experiment ON experiment_decisions (experiment_id, seq);
)sql",
    // 7: a daemon for a team (docs/operations.md#team-use): users with roles, their API tokens
    // (only the SHA-256 of each secret), the audit of every change and refusal, and the owner
    // of each job and experiment. What existed before is the admin's, and so is the configured
    // token.
    R"sql(
ALTER TABLE jobs ADD COLUMN owner TEXT NOT NULL DEFAULT 'admin';
ALTER TABLE experiments ADD COLUMN owner TEXT NOT NULL DEFAULT 'admin';

CREATE TABLE users (
  name TEXT PRIMARY KEY NOT NULL,
  role TEXT NOT NULL,
  disabled INTEGER NOT NULL DEFAULT 0,
  created_at REAL NOT NULL DEFAULT 0
);
INSERT INTO users (name, role) VALUES ('admin', 'admin');

CREATE TABLE tokens (
  id INTEGER PRIMARY KEY,
  user TEXT NOT NULL,
  sha256 TEXT NOT NULL UNIQUE,
  created_at REAL NOT NULL,
  expires_at REAL NOT NULL DEFAULT 0,
  revoked INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX tokens_by_user ON tokens (user, id);

CREATE TABLE audit (
  seq INTEGER PRIMARY KEY,
  at REAL NOT NULL,
  user TEXT NOT NULL DEFAULT '',
  token_id INTEGER NOT NULL DEFAULT 0,
  remote TEXT NOT NULL DEFAULT '',
  method TEXT NOT NULL,
  route TEXT NOT NULL,
  resource TEXT NOT NULL DEFAULT '',
  status INTEGER NOT NULL
);
)sql",
    // 8: the scheduler's priority of each job (docs/operations.md#team-use): the spec's until
    // changed with PATCH /api/v1/jobs/{id}. Jobs from before keep the default order (0).
    R"sql(
ALTER TABLE jobs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
)sql",
    // 9: preemption by checkpoint (docs/operations.md#team-use): the job that last preempted
    // each job. Its state "preempted" needs no change of the schema (states are text).
    R"sql(
ALTER TABLE jobs ADD COLUMN preempted_by TEXT NOT NULL DEFAULT '';
)sql",
    // 10: each job's latest evaluation of each split (docs/storage.md#evaluations): its metrics,
    // per-class values and confusion matrix, as the JSON api/evaluation_json.h writes.
    R"sql(
CREATE TABLE evaluations (
  job_id TEXT NOT NULL,
  split TEXT NOT NULL,
  step INTEGER NOT NULL,
  wall_time REAL NOT NULL,
  body_json TEXT NOT NULL,
  PRIMARY KEY (job_id, split)
);
)sql",
    // 11: fair share across restarts (docs/operations.md#fair-share): each user's decayed usage
    // in slot-seconds as of the wall time `at` it was last charged, so the time the daemon was
    // down decays it like any other. Before this version usage lived in memory only: an upgraded
    // daemon starts everyone at zero, as a restart did.
    R"sql(
CREATE TABLE fair_share_usage (
  owner TEXT PRIMARY KEY NOT NULL,
  usage REAL NOT NULL,
  at REAL NOT NULL
) WITHOUT ROWID;
)sql",
};

// What each migration does, one line each, for `trainingd db migrate --dry-run`.
constexpr const char* kMigrationSummaries[] = {
    "jobs, scalars and their rollups",
    "series ids: scalars and rollups keyed by series (rewrites every point)",
    "jobs.crash_count (crash containment)",
    "attempts of data-parallel jobs",
    "jobs.slurm_job_id",
    "experiments, trials, rung results and decisions; a job's trial columns",
    "users, tokens (hashes only) and the audit; the owner of each job and experiment",
    "jobs.priority (the scheduler's queue order)",
    "jobs.preempted_by (preemption by checkpoint)",
    "evaluations (each job's latest confusion matrix per split)",
    "fair_share_usage (each user's decayed usage, kept across restarts)",
};
static_assert(std::size(kMigrationSummaries) == std::size(kMigrations), "one summary each");

constexpr int kVersion = static_cast<int>(std::size(kMigrations));
static_assert(kStoreApplicationId == 1953656420, "the id in migration 1");

Status CheckVersion(sqlite::Db& db, int64_t version, int64_t app_id) {
  if (app_id != 0 && app_id != kStoreApplicationId) {
    return Status::FailedPrecondition(db.path() + ": not a trainingd database (application_id " +
                                      std::to_string(app_id) + ")");
  }
  if (version > kVersion) {
    return Status::FailedPrecondition(
        db.path() + ": database schema version " + std::to_string(version) +
        " is newer than this trainingd supports (" + std::to_string(kVersion) +
        "); use a newer trainingd, or restore a backup");
  }
  return Status::Ok();
}

}  // namespace

int StoreSchemaVersion() { return kVersion; }

std::vector<MigrationStep> PendingMigrations(int64_t version) {
  std::vector<MigrationStep> steps;
  for (int64_t v = std::max<int64_t>(version, 0); v < kVersion; ++v) {
    steps.push_back({static_cast<int>(v + 1), kMigrationSummaries[v]});
  }
  return steps;
}

Status MigrateStore(sqlite::Db& db, const BeforeMigrating& before) {
  auto version = db.QueryInt("PRAGMA user_version", "reading the schema version");
  if (!version.ok()) return version.status();
  auto app_id = db.QueryInt("PRAGMA application_id", "reading the application id");
  if (!app_id.ok()) return app_id.status();
  TRAININGD_RETURN_IF_ERROR(CheckVersion(db, *version, *app_id));
  if (*version >= kVersion) return Status::Ok();
  if (*version > 0 && before) TRAININGD_RETURN_IF_ERROR(before(*version, kVersion));
  // Every missing migration and the user_version bump in one transaction: a crash or an error
  // anywhere in them leaves the file exactly as it was. The version is read again under the
  // write lock: another process may have migrated meanwhile.
  TRAININGD_RETURN_IF_ERROR(db.Exec("BEGIN IMMEDIATE", "starting a schema migration"));
  version = db.QueryInt("PRAGMA user_version", "reading the schema version");
  Status st = version.ok() ? CheckVersion(db, *version, 0) : version.status();
  for (int64_t v = st.ok() ? *version : kVersion; v < kVersion && st.ok(); ++v) {
    st = db.Exec(kMigrations[v], "migrating to schema version " + std::to_string(v + 1));
  }
  if (st.ok() && *version < kVersion) {
    const std::string bump = "PRAGMA user_version = " + std::to_string(kVersion);
    st = db.Exec(bump.c_str(), "setting the schema version");
  }
  if (st.ok()) st = db.Exec("COMMIT", "committing a schema migration");
  if (!st.ok()) db.RollbackIfOpen();
  return st;
}

Status CreateStoreAtVersion(const std::string& path, int version) {
  if (version < 1 || version > kVersion) {
    return Status::InvalidArgument(path + ": no schema version " + std::to_string(version));
  }
  auto db = sqlite::Db::Open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, 5000);
  if (!db.ok()) return db.status();
  sqlite::Db& d = **db;
  auto current = d.QueryInt("PRAGMA user_version", "reading the schema version");
  if (!current.ok()) return current.status();
  if (*current != 0) return Status::FailedPrecondition(path + ": not an empty database");
  TRAININGD_RETURN_IF_ERROR(d.Exec("PRAGMA journal_mode = WAL", "switching to WAL mode"));
  TRAININGD_RETURN_IF_ERROR(d.Exec("BEGIN IMMEDIATE", "starting the schema"));
  Status st;
  for (int v = 0; v < version && st.ok(); ++v) {
    st = d.Exec(kMigrations[v], "creating schema version " + std::to_string(v + 1));
  }
  const std::string bump = "PRAGMA user_version = " + std::to_string(version);
  if (st.ok()) st = d.Exec(bump.c_str(), "setting the schema version");
  if (st.ok()) st = d.Exec("COMMIT", "committing the schema");
  if (!st.ok()) d.RollbackIfOpen();
  return st;
}

namespace {

struct StoredState {
  api::JobState state;
  const char* name;
};
constexpr StoredState kStoredStates[] = {
    {api::JobState::kQueued, "queued"},      {api::JobState::kRunning, "running"},
    {api::JobState::kStopping, "stopping"},  {api::JobState::kCompleted, "completed"},
    {api::JobState::kFailed, "failed"},      {api::JobState::kStopped, "stopped"},
    {api::JobState::kPreempted, "preempted"}};

}  // namespace

const char* StoredStateName(api::JobState state) {
  for (const StoredState& s : kStoredStates) {
    if (s.state == state) return s.name;
  }
  return "unknown";
}

std::optional<api::JobState> ParseStoredState(std::string_view name) {
  for (const StoredState& s : kStoredStates) {
    if (s.name == name) return s.state;
  }
  return std::nullopt;
}

}  // namespace trainingd::daemon
