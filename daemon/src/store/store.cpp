// Store: the public face. Writes go to a queue that one writer thread drains into transactions
// (store_writer.cpp); reads borrow a connection from a small pool of read connections (the
// scalar reads are in store_query.cpp). The schema is in store_schema.cpp.
#include "trainingd/daemon/store/store.h"

#include <chrono>
#include <condition_variable>
#include <ctime>
#include <deque>
#include <filesystem>
#include <functional>
#include <mutex>
#include <span>
#include <thread>
#include <utility>

#include "store/store_backup.h"
#include "store/store_evaluations.h"
#include "store/store_experiments.h"
#include "store/store_query.h"
#include "store/store_schema.h"
#include "store/store_sqlite.h"
#include "store/store_users.h"
#include "store/store_writer.h"

namespace trainingd::daemon {
namespace {

using engine::Status;

constexpr char kGetJob[] = R"sql(
SELECT id, name, spec_json, state, created_at, started_at, finished_at, global_step, max_steps,
       error, reason, checkpoint_dir, crash_count, slurm_job_id, experiment_id, trial_index,
       hyperparameters_json, owner, priority, preempted_by
FROM jobs WHERE id = ?1)sql";

// Job listings, newest first: all, in a state (?2), after a job (?3), or both.
constexpr char kListJobs[] = R"sql(
SELECT id, name, spec_json, state, created_at, started_at, finished_at, global_step, max_steps,
       error, reason, checkpoint_dir, crash_count, slurm_job_id, experiment_id, trial_index,
       hyperparameters_json, owner, priority, preempted_by
FROM jobs ORDER BY created_at DESC, id DESC LIMIT ?1)sql";
constexpr char kListJobsInState[] = R"sql(
SELECT id, name, spec_json, state, created_at, started_at, finished_at, global_step, max_steps,
       error, reason, checkpoint_dir, crash_count, slurm_job_id, experiment_id, trial_index,
       hyperparameters_json, owner, priority, preempted_by
FROM jobs WHERE state = ?2 ORDER BY created_at DESC, id DESC LIMIT ?1)sql";
constexpr char kListJobsAfter[] = R"sql(
SELECT id, name, spec_json, state, created_at, started_at, finished_at, global_step, max_steps,
       error, reason, checkpoint_dir, crash_count, slurm_job_id, experiment_id, trial_index,
       hyperparameters_json, owner, priority, preempted_by
FROM jobs WHERE (created_at, id) < (SELECT created_at, id FROM jobs WHERE id = ?3)
ORDER BY created_at DESC, id DESC LIMIT ?1)sql";
constexpr char kListJobsInStateAfter[] = R"sql(
SELECT id, name, spec_json, state, created_at, started_at, finished_at, global_step, max_steps,
       error, reason, checkpoint_dir, crash_count, slurm_job_id, experiment_id, trial_index,
       hyperparameters_json, owner, priority, preempted_by
FROM jobs WHERE state = ?2 AND (created_at, id) < (SELECT created_at, id FROM jobs WHERE id = ?3)
ORDER BY created_at DESC, id DESC LIMIT ?1)sql";

engine::Result<JobRecord> ReadJob(const sqlite::Db& db, const sqlite::Stmt& s) {
  JobRecord r;
  r.id = s.Text(0);
  r.name = s.Text(1);
  r.spec_json = s.Text(2);
  const std::string state = s.Text(3);
  const auto parsed = ParseStoredState(state);
  if (!parsed) {
    return Status::DataLoss(db.path() + ": job '" + r.id + "' has an unknown state '" + state +
                            "'");
  }
  r.state = *parsed;
  r.created_at = s.Real(4);
  r.started_at = s.Real(5);
  r.finished_at = s.Real(6);
  r.global_step = s.Int(7);
  r.max_steps = s.Int(8);
  r.error = s.Text(9);
  r.reason = s.Text(10);
  r.checkpoint_dir = s.Text(11);
  r.crash_count = s.Int(12);
  r.slurm_job_id = s.Int(13);
  r.experiment_id = s.Text(14);
  r.trial_index = s.Int(15);
  r.hyperparameters_json = s.Text(16);
  r.owner = s.Text(17);
  r.priority = s.Int(18);
  r.preempted_by = s.Text(19);
  return r;
}

// The writes a WriteGroup holds back on this thread, and the store they are for.
struct HeldWrites {
  const void* store = nullptr;
  int depth = 0;
  std::vector<WriteOp> ops;
};
thread_local HeldWrites t_held;

}  // namespace

struct Store::Impl {
  std::string path;
  StoreOptions options;

  // The write queue. `enqueued` and `processed` count ops; Flush waits for processed to catch up.
  mutable std::mutex mu;
  std::condition_variable work_cv;   // the writer waits for ops or stop
  std::condition_variable done_cv;   // Flush waits for the writer
  std::condition_variable space_cv;  // AddScalars waits for room in the queue
  // A queued op, and whether the op after it belongs to the same WriteGroup (the writer does not
  // end a transaction between the two).
  struct Queued {
    WriteOp op;
    bool joins_next = false;
  };
  std::deque<Queued> queue;
  int64_t enqueued = 0;
  int64_t processed = 0;
  int64_t queued_scalars = 0;  // in `queue`, not yet taken by the writer
  bool stopping = false;
  std::chrono::steady_clock::time_point stop_time;
  Status first_error;  // since the last Flush
  int64_t committed_batches = 0;
  int64_t committed_scalars = 0;
  StoreHealth health;
  // Held while the listener runs, so SetHealthListener returns only once no call is in progress.
  std::mutex listener_mu;
  std::function<void(const StoreHealth&)> health_listener;  // guarded by listener_mu
  std::unique_ptr<StoreWriter> writer;                      // used by the writer thread only
  std::thread thread;

  // Idle read connections.
  std::mutex pool_mu;
  std::vector<std::unique_ptr<sqlite::Db>> idle_readers;

  // Needs mu.
  void EnqueueLocked(WriteOp op, bool joins_next = false) {
    queued_scalars += ScalarCount(op);
    queue.push_back({std::move(op), joins_next});
    ++enqueued;
  }

  void Enqueue(WriteOp op) {
    if (t_held.depth > 0 && t_held.store == this) {
      t_held.ops.push_back(std::move(op));
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      EnqueueLocked(std::move(op));
    }
    work_cv.notify_one();
  }

  // Queues a WriteGroup's writes, which the writer then commits in one transaction.
  void EnqueueGroup(std::vector<WriteOp> ops) {
    if (ops.empty()) return;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (size_t i = 0; i < ops.size(); ++i) EnqueueLocked(std::move(ops[i]), i + 1 < ops.size());
    }
    work_cv.notify_one();
  }

  void EnqueueScalars(AddScalarsOp op) {
    const int64_t n = ScalarCount(op);
    {
      std::unique_lock<std::mutex> lock(mu);
      // Backpressure: a job that writes faster than the disk takes waits for room. While the
      // database cannot be written nobody would make room, so the scalars over the limit are
      // dropped instead (counted; jobs are being stopped then, docs/storage.md).
      space_cv.wait(lock, [&] {
        return queued_scalars + n <= options.max_queued_scalars || queued_scalars == 0 ||
               health.degraded || stopping;
      });
      if (queued_scalars + n > options.max_queued_scalars && queued_scalars > 0) {
        health.dropped_scalars += n;
        return;
      }
      EnqueueLocked(std::move(op));
    }
    work_cv.notify_one();
  }

  // Records a failed or a succeeded attempt and tells the listener when `degraded` changes.
  // Called on the writer thread without mu.
  void NoteAttempt(const Status& failure) {
    StoreHealth now;
    {
      std::lock_guard<std::mutex> lock(mu);
      const bool was = health.degraded;
      if (!failure.ok()) {
        ++health.failed_writes;
        health.degraded = true;
        health.error = failure;
      } else {
        health.degraded = false;
        health.error = Status::Ok();
      }
      if (was == health.degraded) return;
      now = health;
    }
    space_cv.notify_all();
    std::lock_guard<std::mutex> lock(listener_mu);
    if (health_listener) health_listener(now);
  }

  // Applies `batch` until it commits: a failure of the database itself (disk full, I/O error, a
  // lock held too long) is retried with backoff, so no queued write is dropped. Only after a stop
  // has waited give_up_after_stop does the writer give up (the batch is counted as lost).
  StoreWriter::Outcome ApplyWithRetries(std::span<WriteOp> batch) {
    auto backoff = options.retry_initial_backoff;
    for (;;) {
      StoreWriter::Outcome outcome = writer->Apply(batch);
      if (outcome.committed) {
        NoteAttempt(Status::Ok());
        return outcome;
      }
      NoteAttempt(outcome.status);
      std::unique_lock<std::mutex> lock(mu);
      auto wait = backoff;
      if (stopping) {
        const auto left =
            options.give_up_after_stop - (std::chrono::steady_clock::now() - stop_time);
        if (left <= left.zero()) {
          health.lost_writes += static_cast<int64_t>(batch.size());
          return outcome;
        }
        wait = std::min(wait, std::chrono::duration_cast<std::chrono::milliseconds>(left) +
                                  std::chrono::milliseconds(1));
      }
      work_cv.wait_for(lock, wait);  // a stop cuts the wait short
      backoff = std::min(backoff * 2, options.retry_max_backoff);
    }
  }

  void WriterLoop() {
    std::vector<WriteOp> batch;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu);
        work_cv.wait(lock, [this] { return !queue.empty() || stopping; });
        if (queue.empty()) return;  // stopping, and everything is written
        int64_t scalars = 0;
        bool joins = false;  // the last op taken belongs to a group that goes on
        while (!queue.empty() &&
               (batch.empty() || joins || scalars < options.max_scalars_per_transaction)) {
          scalars += ScalarCount(queue.front().op);
          joins = queue.front().joins_next;
          batch.push_back(std::move(queue.front().op));
          queue.pop_front();
        }
        queued_scalars -= scalars;
      }
      space_cv.notify_all();
      StoreWriter::Outcome outcome = ApplyWithRetries(batch);
      {
        std::lock_guard<std::mutex> lock(mu);
        processed += static_cast<int64_t>(batch.size());
        if (!outcome.status.ok() && first_error.ok()) first_error = std::move(outcome.status);
        if (outcome.committed) {
          ++committed_batches;
          committed_scalars += outcome.scalars;
        }
      }
      done_cv.notify_all();
      batch.clear();
    }
  }

  // A read connection, taken from the pool or opened. Give it back with Return.
  engine::Result<std::unique_ptr<sqlite::Db>> TakeReader() {
    {
      std::lock_guard<std::mutex> lock(pool_mu);
      if (!idle_readers.empty()) {
        std::unique_ptr<sqlite::Db> db = std::move(idle_readers.back());
        idle_readers.pop_back();
        return db;
      }
    }
    auto db = sqlite::Db::Open(path, SQLITE_OPEN_READWRITE, options.busy_timeout_ms, options.vfs);
    if (!db.ok()) return db.status();
    // query_only: this connection can never write by mistake.
    TRAININGD_RETURN_IF_ERROR((*db)->Exec("PRAGMA query_only = ON; PRAGMA cache_size = -16384",
                                          "configuring a read connection"));
    return std::move(db).value();
  }

  void Return(std::unique_ptr<sqlite::Db> db) {
    db->RollbackIfOpen();
    if (db->in_transaction()) return;  // something is wrong with it: close it
    std::lock_guard<std::mutex> lock(pool_mu);
    if (static_cast<int>(idle_readers.size()) < options.max_idle_readers) {
      idle_readers.push_back(std::move(db));
    }
  }

  // Runs `read(db)` on a read connection.
  template <typename Fn>
  auto Read(Fn&& read) -> decltype(read(std::declval<sqlite::Db&>())) {
    auto db = TakeReader();
    if (!db.ok()) return db.status();
    auto result = read(**db);
    Return(std::move(db).value());
    return result;
  }
};

engine::Result<std::unique_ptr<Store>> Store::Open(const std::string& path) {
  return Open(path, StoreOptions());
}

engine::Result<std::unique_ptr<Store>> Store::Open(const std::string& path,
                                                   const StoreOptions& options) {
  if (options.busy_timeout_ms < 0 || options.max_idle_readers < 0 ||
      options.max_scalars_per_transaction <= 0 || options.max_queued_scalars <= 0 ||
      options.retry_initial_backoff.count() <= 0 ||
      options.retry_max_backoff < options.retry_initial_backoff) {
    return Status::InvalidArgument(path + ": invalid store options");
  }
  auto db = sqlite::Db::Open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                             options.busy_timeout_ms, options.vfs);
  if (!db.ok()) return db.status();
  sqlite::Db& w = **db;
  // The first statement reads the file header: a file that is not a database fails here.
  auto mode = w.Prepare("PRAGMA journal_mode = WAL");
  if (!mode.ok()) return mode.status();
  {
    sqlite::Stmt& s = **mode;
    sqlite::ResetOnExit reset(s);
    const int rc = s.Step();
    if (rc != SQLITE_ROW) return w.Error(rc, "switching to WAL mode");
    if (s.Text(0) != "wal") {
      return Status::FailedPrecondition(path + ": cannot use WAL mode (journal_mode is " +
                                        s.Text(0) + ")");
    }
  }
  // synchronous=NORMAL in WAL mode: a commit is in the OS once it returns (a process crash loses
  // nothing committed); the WAL is fsynced at checkpoints (a power cut may lose the last ones).
  TRAININGD_RETURN_IF_ERROR(
      w.Exec("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA cache_size = -32768",
             "configuring the connection"));
  const BeforeMigrating backup = [&](int64_t, int to) -> Status {
    if (!options.backup_before_migration) return Status::Ok();
    // Two migrations of one file within a second (tests) get numbered names.
    const std::string base = MigrationBackupName(path, to, std::time(nullptr));
    std::string name = base;
    std::error_code ec;
    for (int n = 2; std::filesystem::exists(name, ec) || std::filesystem::exists(name + ".tmp", ec);
         ++n) {
      name = base + "-" + std::to_string(n);
    }
    Status st = BackupDatabase(w, name);
    if (!st.ok()) return Status(st.code(), "backing up before the migration: " + st.message());
    PruneMigrationBackups(path, options.keep_migration_backups);
    return Status::Ok();
  };
  TRAININGD_RETURN_IF_ERROR(MigrateStore(w, backup));

  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->options = options;
  impl->writer = std::make_unique<StoreWriter>(std::move(db).value());
  // One read connection up front: a file the readers cannot open fails here, not later.
  auto reader = impl->TakeReader();
  if (!reader.ok()) return reader.status();
  impl->Return(std::move(reader).value());
  Impl* p = impl.get();
  impl->thread = std::thread([p] { p->WriterLoop(); });
  return std::unique_ptr<Store>(new Store(std::move(impl)));
}

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Store::~Store() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopping = true;
    impl_->stop_time = std::chrono::steady_clock::now();
  }
  impl_->work_cv.notify_all();
  impl_->space_cv.notify_all();
  impl_->thread.join();  // the writer drains the queue first
}

void Store::PutJob(const JobRecord& job) { impl_->Enqueue(PutJobOp{job}); }

void Store::UpdateJobState(const std::string& id, api::JobState state, double started_at,
                           double finished_at, const std::string& error,
                           const std::string& reason) {
  impl_->Enqueue(UpdateJobStateOp{id, state, started_at, finished_at, error, reason});
}

void Store::UpdateJobStep(const std::string& id, int64_t global_step) {
  impl_->Enqueue(UpdateJobStepOp{id, global_step});
}

void Store::PutAttempt(const std::string& job_id, const api::AttemptInfo& attempt) {
  impl_->Enqueue(PutAttemptOp{job_id, attempt});
}

void Store::UpdateJobCrashCount(const std::string& id, int64_t crash_count) {
  impl_->Enqueue(UpdateJobCounterOp{id, UpdateJobCounterOp::Column::kCrashCount, crash_count});
}

void Store::UpdateJobSlurmId(const std::string& id, int64_t slurm_job_id) {
  impl_->Enqueue(UpdateJobCounterOp{id, UpdateJobCounterOp::Column::kSlurmJobId, slurm_job_id});
}
void Store::AddScalars(std::vector<ScalarRecord> scalars) {
  if (scalars.empty()) return;
  impl_->EnqueueScalars(AddScalarsOp{std::move(scalars)});
}

void Store::DropScalarsAfter(const std::string& job_id, int64_t step) {
  impl_->Enqueue(DropScalarsAfterOp{job_id, step});
}

void Store::DeleteJob(const std::string& id) { impl_->Enqueue(DeleteJobOp{id}); }

void Store::PutEvaluation(const EvaluationRecord& evaluation) {
  impl_->Enqueue(PutEvaluationOp{evaluation});
}

void Store::PutExperiment(const ExperimentRecord& experiment) {
  impl_->Enqueue(PutExperimentOp{experiment});
}
void Store::PutTrial(const TrialRecord& trial) { impl_->Enqueue(PutTrialOp{trial}); }
void Store::PutRungResult(const RungResultRecord& result) {
  impl_->Enqueue(PutRungResultOp{result});
}
void Store::AddDecision(const DecisionRecord& decision) { impl_->Enqueue(AddDecisionOp{decision}); }
void Store::DeleteExperiment(const std::string& id) { impl_->Enqueue(DeleteExperimentOp{id}); }
void Store::PutUser(const UserRecord& user) { impl_->Enqueue(PutUserOp{user}); }
void Store::DeleteUser(const std::string& name) { impl_->Enqueue(DeleteUserOp{name}); }
void Store::PutToken(const TokenRecord& token) { impl_->Enqueue(PutTokenOp{token}); }
void Store::AddAudit(const api::AuditEntry& entry, int64_t keep) {
  impl_->Enqueue(AddAuditOp{entry, keep});
}
void Store::PutFairShareUsage(const FairShareUsageRecord& usage) {
  impl_->Enqueue(PutFairShareUsageOp{usage});
}

Store::WriteGroup::WriteGroup(Store& store) : store_(store) {
  // One store's group at a time per thread: a second store's writes would not be held.
  if (t_held.depth == 0) t_held.store = store.impl_.get();
  ++t_held.depth;
}

Store::WriteGroup::~WriteGroup() {
  if (--t_held.depth > 0) return;
  std::vector<WriteOp> ops = std::move(t_held.ops);
  t_held.ops.clear();
  t_held.store = nullptr;
  store_.impl_->EnqueueGroup(std::move(ops));
}

Status Store::Flush() {
  std::unique_lock<std::mutex> lock(impl_->mu);
  const int64_t target = impl_->enqueued;
  impl_->done_cv.wait(lock, [&] { return impl_->processed >= target; });
  Status error = std::move(impl_->first_error);
  impl_->first_error = Status::Ok();
  return error;
}

Status Store::Flush(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(impl_->mu);
  const int64_t target = impl_->enqueued;
  if (!impl_->done_cv.wait_for(lock, timeout, [&] { return impl_->processed >= target; })) {
    return Status::DeadlineExceeded(
        impl_->path + ": writes not committed after " + std::to_string(timeout.count()) + " ms (" +
        (impl_->health.degraded ? impl_->health.error.ToString() : std::string("still writing")) +
        ")");
  }
  Status error = std::move(impl_->first_error);
  impl_->first_error = Status::Ok();
  return error;
}

Status Store::FlushForReply(std::chrono::milliseconds timeout) {
  return Flush(health().degraded ? std::chrono::milliseconds(0) : timeout);
}

void Store::SetHealthListener(std::function<void(const StoreHealth&)> listener) {
  std::lock_guard<std::mutex> lock(impl_->listener_mu);
  impl_->health_listener = std::move(listener);
}

StoreHealth Store::health() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->health;
}

engine::Result<std::optional<JobRecord>> Store::GetJob(const std::string& id) {
  return impl_->Read([&](sqlite::Db& db) -> engine::Result<std::optional<JobRecord>> {
    auto stmt = db.Prepare(kGetJob);
    if (!stmt.ok()) return stmt.status();
    sqlite::Stmt& s = **stmt;
    sqlite::ResetOnExit reset(s);
    s.Bind(1, id);
    const int rc = s.Step();
    if (rc == SQLITE_DONE) return std::optional<JobRecord>();
    if (rc != SQLITE_ROW) return db.Error(rc, "reading job '" + id + "'");
    auto job = ReadJob(db, s);
    if (!job.ok()) return job.status();
    return std::optional<JobRecord>(std::move(job).value());
  });
}

engine::Result<std::vector<JobRecord>> Store::ListJobs(std::optional<api::JobState> state,
                                                       int64_t limit, const std::string& after_id) {
  if (limit <= 0) {
    return Status::InvalidArgument("limit must be positive, got " + std::to_string(limit));
  }
  auto jobs = impl_->Read([&](sqlite::Db& db) -> engine::Result<std::vector<JobRecord>> {
    const char* sql = state ? (after_id.empty() ? kListJobsInState : kListJobsInStateAfter)
                            : (after_id.empty() ? kListJobs : kListJobsAfter);
    auto stmt = db.Prepare(sql);
    if (!stmt.ok()) return stmt.status();
    sqlite::Stmt& s = **stmt;
    sqlite::ResetOnExit reset(s);
    s.Bind(1, limit);
    if (state) s.Bind(2, std::string_view(StoredStateName(*state)));
    if (!after_id.empty()) s.Bind(3, after_id);
    std::vector<JobRecord> out;
    int rc;
    while ((rc = s.Step()) == SQLITE_ROW) {
      auto job = ReadJob(db, s);
      if (!job.ok()) return job.status();
      out.push_back(std::move(job).value());
    }
    if (rc != SQLITE_DONE) return db.Error(rc, "listing jobs");
    return out;
  });
  if (!jobs.ok() || !jobs->empty() || after_id.empty()) return jobs;
  // Nothing after `after_id`: the end of the list, or a cursor that names no job.
  auto cursor = GetJob(after_id);
  if (!cursor.ok()) return cursor.status();
  if (!cursor->has_value()) {
    return Status::InvalidArgument("after_id '" + after_id + "' is not a job");
  }
  return jobs;
}

engine::Result<std::vector<UserRecord>> Store::ListUsers() {
  return impl_->Read([](sqlite::Db& db) { return QueryUsers(db); });
}

engine::Result<std::vector<TokenRecord>> Store::ListTokens() {
  return impl_->Read([](sqlite::Db& db) { return QueryTokens(db); });
}

engine::Result<std::vector<api::AuditEntry>> Store::ListAudit(int64_t before, int64_t limit) {
  return impl_->Read([&](sqlite::Db& db) { return QueryAudit(db, before, limit); });
}

engine::Result<std::vector<FairShareUsageRecord>> Store::ListFairShareUsage() {
  return impl_->Read([](sqlite::Db& db) { return QueryFairShareUsage(db); });
}

engine::Result<std::vector<ExperimentRecord>> Store::ListExperiments() {
  return impl_->Read([](sqlite::Db& db) { return QueryExperiments(db); });
}

engine::Result<std::vector<TrialRecord>> Store::ListTrials(const std::string& experiment_id) {
  return impl_->Read([&](sqlite::Db& db) { return QueryTrials(db, experiment_id); });
}

engine::Result<std::vector<RungResultRecord>> Store::ListRungResults(
    const std::string& experiment_id) {
  return impl_->Read([&](sqlite::Db& db) { return QueryRungResults(db, experiment_id); });
}

engine::Result<std::vector<DecisionRecord>> Store::ListDecisions(const std::string& experiment_id,
                                                                 int64_t limit) {
  if (limit <= 0) {
    return Status::InvalidArgument("limit must be positive, got " + std::to_string(limit));
  }
  return impl_->Read([&](sqlite::Db& db) { return QueryDecisions(db, experiment_id, limit); });
}

engine::Result<std::vector<api::ScalarPoint>> Store::QueryScalars(const std::string& job_id,
                                                                  const api::ScalarQuery& query) {
  if (query.tag.empty()) return Status::InvalidArgument("tag must not be empty");
  if (query.max_points <= 0) {
    return Status::InvalidArgument("max_points must be positive, got " +
                                   std::to_string(query.max_points));
  }
  if (query.from_step && query.to_step && *query.from_step > *query.to_step) {
    return Status::InvalidArgument("from_step (" + std::to_string(*query.from_step) +
                                   ") must not be greater than to_step (" +
                                   std::to_string(*query.to_step) + ")");
  }
  return impl_->Read([&](sqlite::Db& db) { return QueryScalarSeries(db, job_id, query); });
}

engine::Result<std::vector<std::string>> Store::ScalarTags(const std::string& job_id) {
  return impl_->Read([&](sqlite::Db& db) { return QueryScalarTags(db, job_id); });
}

engine::Result<std::map<std::string, double>> Store::LatestScalars(const std::string& job_id) {
  return impl_->Read([&](sqlite::Db& db) { return QueryLatestScalars(db, job_id); });
}

engine::Result<std::optional<EvaluationRecord>> Store::GetEvaluation(const std::string& job_id,
                                                                     const std::string& split) {
  return impl_->Read([&](sqlite::Db& db) { return QueryEvaluation(db, job_id, split); });
}

engine::Result<std::map<std::string, std::vector<api::AttemptInfo>>> Store::ListAttempts() {
  return impl_->Read([&](sqlite::Db& db) { return QueryAttempts(db); });
}

StoreStats Store::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  StoreStats s;
  s.queued_writes = impl_->enqueued - impl_->processed;
  s.committed_batches = impl_->committed_batches;
  s.committed_scalars = impl_->committed_scalars;
  s.queued_scalars = impl_->queued_scalars;
  s.failed_writes = impl_->health.failed_writes;
  s.dropped_scalars = impl_->health.dropped_scalars;
  s.lost_writes = impl_->health.lost_writes;
  return s;
}

const std::string& Store::path() const { return impl_->path; }

}  // namespace trainingd::daemon
