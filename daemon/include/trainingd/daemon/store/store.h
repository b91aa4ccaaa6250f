// Store: the daemon's SQLite database -- job rows and scalar summaries (docs/storage.md).
//
// One file in WAL mode with busy_timeout; the schema is versioned with PRAGMA user_version and
// migrated on open. Writes go through one writer thread that batches everything queued into one
// transaction; a write call only enqueues and returns at once (callers on hot paths never wait for
// the disk). Flush() waits until everything queued so far is committed. Reads run on their own
// connections and see every committed write. Thread-safe: any thread may call anything, except
// that nothing may run concurrently with the destructor.
//
// Crash safety: a write is durable once committed (WAL, synchronous=NORMAL: a process crash,
// kill -9 included, loses nothing committed; a power cut may lose the last transactions).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainingd/api/audit_service.h"
#include "trainingd/api/experiment_service.h"
#include "trainingd/api/job_service.h"
#include "trainingd/api/user_service.h"
#include "trainingd/daemon/store/store_file.h"
#include "trainingd/engine/base/status.h"

namespace trainingd::daemon {

// A job's row. `spec_json` is the canonical job spec.
struct JobRecord {
  std::string id;
  std::string name;
  std::string spec_json;
  api::JobState state = api::JobState::kQueued;
  double created_at = 0;
  double started_at = 0;
  double finished_at = 0;
  int64_t global_step = 0;
  int64_t max_steps = 0;
  std::string error;
  std::string reason;
  std::string checkpoint_dir;
  // Times in a row the daemon died while the job ran (docs/operations.md#crash-containment).
  int64_t crash_count = 0;
  // Its latest run's Slurm job id (the SlurmExecutor's); 0 = none.
  int64_t slurm_job_id = 0;
  // A trial of an experiment: which, and its hyperparameters ({path: value} JSON); "" = none.
  std::string experiment_id;
  int64_t trial_index = 0;
  std::string hyperparameters_json;
  // The user who submitted it (a trial: its experiment's); jobs from before users: the admin.
  std::string owner{api::kAdminUser};
  // Its queue priority (the spec's until PATCHed; schema 8); jobs from before: 0.
  int64_t priority = 0;
  // The job that last preempted it (schema 9); "" = none.
  std::string preempted_by;
};

// An experiment's row (docs/experiments.md): its spec and what is not derived from its trials.
struct ExperimentRecord {
  std::string id;
  std::string name;
  std::string spec_json;  // the canonical experiment spec
  api::ExperimentState state = api::ExperimentState::kRunning;
  double created_at = 0;
  double finished_at = 0;
  std::string error;
  std::string reason;
  double seconds_used = 0;    // wall time spent running, up to run_started_at
  double run_started_at = 0;  // when the current running period began; 0 = not running
  int64_t peak_disk_bytes = 0;
  std::string owner{api::kAdminUser};  // the user who submitted it
};

// A user of the daemon (api/user_service.h); the users table.
struct UserRecord {
  std::string name;
  api::Role role = api::Role::kUser;
  bool disabled = false;
  double created_at = 0;
};

// An API token: only the SHA-256 of its secret is kept; the tokens table.
struct TokenRecord {
  int64_t id = 0;  // assigned by the caller, > 0, unique
  std::string user;
  std::string sha256;  // 64 lowercase hex digits
  double created_at = 0;
  double expires_at = 0;  // 0 = never
  bool revoked = false;
};

// A user's fair-share usage (docs/operations.md#fair-share); the fair_share_usage table.
struct FairShareUsageRecord {
  std::string owner;
  double usage = 0;  // decayed slot-seconds as of `at`
  double at = 0;     // wall time (seconds since the epoch) of its last charge
};

// A trial of an experiment: its place in the search. Its job holds the training state.
struct TrialRecord {
  std::string experiment_id;
  int64_t index = 0;
  std::string job_id;
  std::string hyperparameters_json;  // {path: value}, in the space's order
  uint64_t seed = 0;
  api::TrialState state = api::TrialState::kRunning;
  int64_t target_steps = 0;
  int64_t restarts = 0;
  std::string reason;
  bool checkpoints_kept = true;
  double created_at = 0;
};

// A trial's metric at a rung: ASHA's record, from which promotions are decided.
struct RungResultRecord {
  std::string experiment_id;
  int64_t trial_index = 0;
  int rung = 0;
  int64_t step = 0;
  double metric = 0;  // NaN = the trial's metric was not a number
  double recorded_at = 0;
};

// A searcher decision ("start", "result", "promote", "prune", "restart", "fail", "end", ...), kept
// as the experiment's audit trail.
struct DecisionRecord {
  int64_t seq = 0;  // assigned by the store, in order
  std::string experiment_id;
  double at = 0;
  std::string kind;
  int64_t trial_index = -1;  // -1 = the experiment itself
  int rung = -1;
  std::string detail;
};

// A job's latest evaluation of a split (schema 10): the JSON of api/evaluation_json.h.
struct EvaluationRecord {
  std::string job_id;
  std::string split;
  int64_t step = 0;
  double wall_time = 0;
  std::string body_json;
};

struct ScalarRecord {
  std::string job_id;
  std::string tag;
  int64_t step = 0;
  double wall_time = 0;
  double value = 0;
};

// Tuning; the defaults suit the daemon.
struct StoreOptions {
  // How long a statement waits for a lock another connection (or process) holds before it fails
  // with Unavailable.
  int busy_timeout_ms = 5000;
  // Read connections kept open between reads; more are opened while more threads read at once.
  int max_idle_readers = 4;
  // The writer commits at most about this many scalars per transaction, so that one huge backlog
  // does not become one huge transaction.
  int64_t max_scalars_per_transaction = 262144;
  // The write queue holds at most about this many scalars: AddScalars waits for room (about
  // 100 bytes each queued, so ~100 MB by default).
  int64_t max_queued_scalars = 1 << 20;
  // A transaction the database fails (disk full, I/O error, a lock held past busy_timeout_ms) is
  // retried after this, doubling up to retry_max_backoff, until it commits.
  std::chrono::milliseconds retry_initial_backoff{100};
  std::chrono::milliseconds retry_max_backoff{5000};
  // Once the store is being destroyed, the writer gives up on failing writes after this long
  // (so a daemon on a dead disk can still exit); what it gives up is counted in lost_writes.
  std::chrono::milliseconds give_up_after_stop{10000};
  // The SQLite VFS to use; "" = the default (tests inject faults with their own).
  std::string vfs;
  // Before migrating a database that holds data to a newer schema, Open writes a consistent copy
  // of it beside it, <path>.before-v<N>-<UTC time> (store_file.h), and keeps the newest
  // keep_migration_backups of those (older ones are deleted once the new one is written). A
  // backup that cannot be written (a full disk) fails the Open with nothing migrated.
  bool backup_before_migration = true;
  int keep_migration_backups = kKeptMigrationBackups;
};

struct StoreStats {
  int64_t queued_writes = 0;  // waiting for the writer now
  int64_t queued_scalars = 0;
  int64_t committed_batches = 0;
  int64_t committed_scalars = 0;
  int64_t failed_writes = 0;    // transactions the database failed (each retried)
  int64_t dropped_scalars = 0;  // scalars refused while the queue was full and writes failing
  int64_t lost_writes = 0;      // writes given up at shutdown
};

// Whether the database can be written now.
struct StoreHealth {
  bool degraded = false;  // the latest transaction failed; it is being retried
  engine::Status error;   // why, while degraded
  int64_t failed_writes = 0;
  int64_t dropped_scalars = 0;
  int64_t lost_writes = 0;
};

class Store {
 public:
  // Opens (creating) the database at `path` and migrates it. Errors name the file: IoError (cannot
  // open or create), DataLoss (not an SQLite database, or corrupt), Unavailable (locked by another
  // connection for longer than busy_timeout_ms), FailedPrecondition (a schema version newer than
  // this build knows, or another application's database). A migration runs in one transaction
  // after a backup (StoreOptions::backup_before_migration): killed or failed halfway, it leaves
  // the file as it was, and the next Open migrates it again.
  static engine::Result<std::unique_ptr<Store>> Open(const std::string& path);
  static engine::Result<std::unique_ptr<Store>> Open(const std::string& path,
                                                     const StoreOptions& options);
  ~Store();  // writes everything queued, then stops the writer; errors of those writes are lost

  // --- writes: queued, batched, in order ---
  // Errors surface at the next Flush(). A write that fails on its own (scalars for a job that does
  // not exist, an empty id or tag, a NaN wall_time) is skipped and the rest of its batch is
  // committed; a failure of the database itself (disk full, I/O error, lock timeout) is retried
  // with backoff until the batch commits, so no job or state change is ever dropped.
  void PutJob(const JobRecord& job);  // insert or replace the whole row; keeps the job's scalars
  // Sets these five fields. Updates of a job that does not exist (deleted meanwhile) do nothing.
  void UpdateJobState(const std::string& id, api::JobState state, double started_at,
                      double finished_at, const std::string& error, const std::string& reason);
  void UpdateJobStep(const std::string& id, int64_t global_step);        // unknown id: nothing
  void UpdateJobCrashCount(const std::string& id, int64_t crash_count);  // unknown id: nothing
  void UpdateJobSlurmId(const std::string& id, int64_t slurm_job_id);    // unknown id: nothing
  // Replaces (job, tag, step) duplicates (the last one queued wins). The job must exist (NotFound).
  // Waits while the queue holds max_queued_scalars (backpressure); while writes fail, scalars
  // beyond that are dropped and counted (StoreStats::dropped_scalars) rather than waiting.
  void AddScalars(std::vector<ScalarRecord> scalars);
  // Deletes the job's scalars and evaluations with step > `step` (on resume from a checkpoint
  // at `step`).
  void DropScalarsAfter(const std::string& job_id, int64_t step);
  void DeleteJob(const std::string& id);  // the row, its scalars, evaluations and attempts
  // Inserts or replaces the job's evaluation of `evaluation.split`; a job that is not stored:
  // nothing.
  void PutEvaluation(const EvaluationRecord& evaluation);
  // Inserts or replaces attempt `attempt.attempt` of a job (a data-parallel job's runs); a job
  // that is not stored: nothing.
  void PutAttempt(const std::string& job_id, const api::AttemptInfo& attempt);
  // Experiments (docs/experiments.md). Each Put inserts or replaces the whole row.
  void PutExperiment(const ExperimentRecord& experiment);
  void PutTrial(const TrialRecord& trial);
  void PutRungResult(const RungResultRecord& result);
  void AddDecision(const DecisionRecord& decision);
  // The experiment's rows: itself, its trials, rung results and decisions (not its jobs).
  void DeleteExperiment(const std::string& id);
  // Users and tokens (docs/operations.md#team-use). Put inserts or replaces the whole row;
  // DeleteUser deletes the user and its tokens.
  void PutUser(const UserRecord& user);
  void DeleteUser(const std::string& name);
  void PutToken(const TokenRecord& token);
  // Appends an audit row (its seq is assigned by the store), then deletes the rows older than
  // the newest `keep` (retention; keep <= 0 keeps all).
  void AddAudit(const api::AuditEntry& entry, int64_t keep);
  // Inserts or replaces the owner's fair-share usage row.
  void PutFairShareUsage(const FairShareUsageRecord& usage);

  // While a WriteGroup is alive, the writes this thread queues on the store are held back; when
  // it ends they are queued together, and the writer commits them in one transaction: a crash
  // keeps all of them or none. (An experiment's decision and the job change it causes.) Groups
  // nest: the outermost one queues. Scalars are never held back.
  class WriteGroup {
   public:
    explicit WriteGroup(Store& store);
    WriteGroup(const WriteGroup&) = delete;
    WriteGroup& operator=(const WriteGroup&) = delete;
    ~WriteGroup();

   private:
    Store& store_;
  };

  // Waits until every write queued before the call is committed (or has failed); returns the first
  // write error since the last Flush, if any, and clears it. While the database fails, writes are
  // retried and this waits for them (see the timed Flush).
  engine::Status Flush();
  // Flush, waiting at most `timeout`: DeadlineExceeded (with the database's error while it
  // fails) when the writes are not committed by then; they stay queued.
  engine::Status Flush(std::chrono::milliseconds timeout);
  // Flush(timeout) before a request's reply: while the database fails (health().degraded) it
  // does not wait. The writes stay queued and are retried (seconds apart), so waiting would only
  // delay the reply; it returns DeadlineExceeded with the database's error at once.
  engine::Status FlushForReply(std::chrono::milliseconds timeout);

  // `listener` is called on the writer thread each time writes start or stop failing. It may
  // queue writes but must not wait for the writer (AddScalars, Flush, SetHealthListener). Once
  // this returns, the previous listener is not running and is not called again.
  void SetHealthListener(std::function<void(const StoreHealth&)> listener);
  StoreHealth health() const;

  // --- reads: see every write committed before they start; never wait for the writer ---
  // Errors name the database file; IoError/DataLoss/Unavailable as for Open.
  engine::Result<std::optional<JobRecord>> GetJob(const std::string& id);
  // Newest first (created_at, then id); `state` filters; `after_id` pages (jobs older than it).
  // InvalidArgument: limit <= 0 ("limit ..."), after_id not a job ("after_id ...").
  engine::Result<std::vector<JobRecord>> ListJobs(std::optional<api::JobState> state, int64_t limit,
                                                  const std::string& after_id);
  // The points of `query.tag` with from_step <= step <= to_step, in step order: all of them, raw
  // (min = max = value), when there are at most max_points. Otherwise at most max_points points
  // (docs/storage.md): the first point of the range as it is, then the rest cut into equal step
  // buckets (at most max_points - 1, aligned to multiples of the bucket width), each non-empty one
  // giving its last point (step, wall_time, value) with the bucket's min and max -- so the last
  // point of the range is kept too, and a spike always shows as its bucket's max or min.
  // max_points = 1 gives one point: the last, with the min and max of the whole range. NaN values
  // are kept (as values and as min/max of all-NaN buckets); min and max skip them otherwise.
  // An unknown job or tag gives no points.
  // InvalidArgument naming the field: empty tag, max_points <= 0, from_step > to_step.
  engine::Result<std::vector<api::ScalarPoint>> QueryScalars(const std::string& job_id,
                                                             const api::ScalarQuery& query);
  // The job's tags, sorted; none for an unknown job.
  engine::Result<std::vector<std::string>> ScalarTags(const std::string& job_id);
  // The latest value (at the highest step) of each tag.
  engine::Result<std::map<std::string, double>> LatestScalars(const std::string& job_id);
  // The job's latest evaluation of `split`, or ("" split) the latest of any split (by wall
  // time); nullopt when there is none.
  engine::Result<std::optional<EvaluationRecord>> GetEvaluation(const std::string& job_id,
                                                                const std::string& split);
  // Every job's attempts, by job id, in attempt order.
  engine::Result<std::map<std::string, std::vector<api::AttemptInfo>>> ListAttempts();
  // Every experiment, oldest first; the trials and rung results of one experiment ("" = of all),
  // by experiment, then trial index (and rung); its latest `limit` decisions, in order.
  engine::Result<std::vector<ExperimentRecord>> ListExperiments();
  engine::Result<std::vector<TrialRecord>> ListTrials(const std::string& experiment_id);
  engine::Result<std::vector<RungResultRecord>> ListRungResults(const std::string& experiment_id);
  engine::Result<std::vector<DecisionRecord>> ListDecisions(const std::string& experiment_id,
                                                            int64_t limit);

  // Every user by name; every token by id; audit rows with seq < before (0 = from the newest),
  // newest first, at most `limit`.
  engine::Result<std::vector<UserRecord>> ListUsers();
  engine::Result<std::vector<TokenRecord>> ListTokens();
  engine::Result<std::vector<api::AuditEntry>> ListAudit(int64_t before, int64_t limit);
  // Every owner's fair-share usage, by owner.
  engine::Result<std::vector<FairShareUsageRecord>> ListFairShareUsage();

  StoreStats stats() const;
  const std::string& path() const;

 private:
  struct Impl;
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace trainingd::daemon
