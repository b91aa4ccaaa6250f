// The store's write side (private to daemon/src): the operations Store queues, and StoreWriter,
// which applies a batch of them in one transaction on the writer connection, keeping the scalar
// rollups (store_scalars.h) in step with the points.
//
// Scalars are grouped per series as their ops are applied and written when the batch ends (or
// before an op that must see them: DropScalarsAfter, DeleteJob), sorted by step with the last
// one queued for a step winning. The writer remembers each series' id and largest stored step;
// points above it are certainly new and take the fast path (multi-row INSERTs, their rollups
// merged or inserted whole), the others are inserted or replace a stored point, and the rollup
// blocks holding a replaced point are recomputed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

#include "store/store_sqlite.h"
#include "trainingd/daemon/store/store.h"
#include "trainingd/engine/base/status.h"

namespace trainingd::daemon {

struct PutJobOp {
  JobRecord job;
};
struct UpdateJobStateOp {
  std::string id;
  api::JobState state;
  double started_at;
  double finished_at;
  std::string error;
  std::string reason;
};
struct UpdateJobStepOp {
  std::string id;
  int64_t global_step;
};
// One integer column of a job's row: crash_count or slurm_job_id.
struct UpdateJobCounterOp {
  enum class Column { kCrashCount, kSlurmJobId };
  std::string id;
  Column column;
  int64_t value;
};
struct AddScalarsOp {
  std::vector<ScalarRecord> scalars;
};
struct DropScalarsAfterOp {
  std::string job_id;
  int64_t step;
};
struct DeleteJobOp {
  std::string id;
};
struct PutAttemptOp {
  std::string job_id;
  api::AttemptInfo attempt;
};
struct PutEvaluationOp {
  EvaluationRecord evaluation;
};
struct PutExperimentOp {
  ExperimentRecord experiment;
};
struct PutTrialOp {
  TrialRecord trial;
};
struct PutRungResultOp {
  RungResultRecord result;
};
struct AddDecisionOp {
  DecisionRecord decision;
};
struct DeleteExperimentOp {
  std::string id;
};
struct PutUserOp {
  UserRecord user;
};
struct DeleteUserOp {
  std::string name;
};
struct PutTokenOp {
  TokenRecord token;
};
struct AddAuditOp {
  api::AuditEntry entry;
  int64_t keep;  // rows kept after this one is added; <= 0 = all
};
struct PutFairShareUsageOp {
  FairShareUsageRecord usage;
};
using WriteOp =
    std::variant<PutJobOp, UpdateJobStateOp, UpdateJobStepOp, UpdateJobCounterOp, AddScalarsOp,
                 DropScalarsAfterOp, DeleteJobOp, PutAttemptOp, PutEvaluationOp, PutExperimentOp,
                 PutTrialOp, PutRungResultOp, AddDecisionOp, DeleteExperimentOp, PutUserOp,
                 DeleteUserOp, PutTokenOp, AddAuditOp, PutFairShareUsageOp>;

// The number of scalars `op` writes (0 unless it is an AddScalarsOp).
int64_t ScalarCount(const WriteOp& op);

class StoreWriter {
 public:
  explicit StoreWriter(std::unique_ptr<sqlite::Db> db) : db_(std::move(db)) {}

  struct Outcome {
    engine::Status status;   // the first error, if any
    bool committed = false;  // false: the whole batch was rolled back
    int64_t scalars = 0;     // scalars committed
  };
  // Applies `ops` in order in one transaction and commits. An op that fails on its own (unknown
  // job, empty id or tag, NaN wall time, a constraint) is skipped and the rest is committed; any
  // other failure rolls the whole batch back.
  Outcome Apply(std::span<WriteOp> ops);

 private:
  // A point queued in this batch and not written yet.
  struct PendingPoint {
    int64_t step;
    double wall_time;
    double value;
    bool replaced;  // set when written: an older point at the same step was overwritten
  };
  // The points of one series queued in this batch, in the order they were queued.
  struct PendingSeries {
    std::string job_id;
    std::string tag;
    std::vector<PendingPoint> points;
  };
  // A rollup block's share of the points written for a series in this batch.
  struct BlockSummary {
    int64_t block;
    double min_value;  // NaN only when every value is NaN
    double max_value;
    int64_t last_step;
    double last_wall_time;
    double last_value;
    bool replaced;  // one of the points replaced a stored one
  };
  // What the writer knows of a series in the database, kept across transactions. Forgotten
  // when a batch is rolled back and when another connection has written (PRAGMA data_version).
  struct SeriesState {
    bool known = false;      // false: `id` is still to be read (or the series created)
    int64_t id = 0;          // series.id
    bool max_known = false;  // false: `empty` and `max_step` are still to be read
    bool empty = true;       // the series has no points
    int64_t max_step = 0;    // the largest step stored, unless empty
  };

  engine::Status Do(PutJobOp& op);
  engine::Status Do(UpdateJobStateOp& op);
  engine::Status Do(UpdateJobStepOp& op);
  engine::Status Do(UpdateJobCounterOp& op);
  engine::Status Do(PutAttemptOp& op);
  engine::Status Do(AddScalarsOp& op);
  engine::Status Do(DropScalarsAfterOp& op);
  engine::Status Do(DeleteJobOp& op);
  // store_evaluations.cpp
  engine::Status Do(PutEvaluationOp& op);
  // store_experiments.cpp
  engine::Status Do(PutExperimentOp& op);
  engine::Status Do(PutTrialOp& op);
  engine::Status Do(PutRungResultOp& op);
  engine::Status Do(AddDecisionOp& op);
  engine::Status Do(DeleteExperimentOp& op);
  // store_users.cpp
  engine::Status Do(PutUserOp& op);
  engine::Status Do(DeleteUserOp& op);
  engine::Status Do(PutTokenOp& op);
  engine::Status Do(AddAuditOp& op);
  engine::Status Do(PutFairShareUsageOp& op);
  // Runs `sql` with `bind` binding its parameters; a failure is the op's (`what`).
  engine::Status RunOne(const char* sql, std::string_view what,
                        const std::function<void(sqlite::Stmt&)>& bind);

  engine::Status CheckScalars(const std::vector<ScalarRecord>& scalars);
  engine::Result<bool> JobExists(const std::string& id);
  // The pending_ index of (job_id, tag), added if new.
  size_t PendingIndex(const std::string& job_id, const std::string& tag);
  // Writes every pending point and brings the rollups up to date with them. Any failure loses
  // the batch.
  engine::Status WritePending();
  engine::Status WriteSeries(PendingSeries& series);
  // The state of (job_id, tag) with its id and largest step known; creates the series if new.
  engine::Result<SeriesState*> Series(const std::string& job_id, const std::string& tag);
  // Points with steps above every stored one of the series: plain multi-row INSERTs.
  engine::Status InsertNew(int64_t series_id, const std::string& tag,
                           std::span<const PendingPoint> points);
  // Points that may exist: insert, or overwrite and mark `replaced`.
  engine::Status InsertOrReplace(int64_t series_id, const std::string& tag,
                                 std::span<PendingPoint> points);
  // Folds written points (sorted by step, unique) into the rollups. `old` is the series as it
  // was before them: blocks after the one holding its largest step have no row yet.
  engine::Status UpdateRollups(int64_t series_id, const std::string& tag,
                               std::span<const PendingPoint> points, const SeriesState& old);
  // Folds a summary into the block's row, creating it if missing.
  engine::Status MergeBlock(int64_t series_id, const std::string& tag, int level,
                            const BlockSummary& summary);
  // Writes the rows of blocks that have none yet.
  engine::Status InsertBlocks(int64_t series_id, const std::string& tag, int level,
                              std::span<const BlockSummary> blocks);
  // Rebuilds one rollup block from the level below (the points, for level 1).
  engine::Status RecomputeBlock(int64_t series_id, const std::string& tag, int level,
                                int64_t block);
  // The error for a failed statement. Marks the batch as lost unless the failure was a
  // constraint of one statement (which SQLite undoes alone) and `op_level` allows that.
  engine::Status Fail(int rc, std::string_view what, bool op_level = false);
  // Marks the batch as lost; returns `status`.
  engine::Status Lost(engine::Status status);

  std::unique_ptr<sqlite::Db> db_;
  bool fatal_ = false;
  std::unordered_set<std::string> known_jobs_;  // jobs seen to exist in this transaction
  std::vector<PendingSeries> pending_;
  std::unordered_map<std::string, size_t> pending_index_;  // job_id '\0' tag -> pending_
  std::vector<size_t> op_series_;  // Do(AddScalarsOp): pending_ indices of the op's series
  std::vector<BlockSummary> blocks_, new_blocks_;  // UpdateRollups' scratch
  // job id -> tag -> what is known of the series.
  std::unordered_map<std::string, std::unordered_map<std::string, SeriesState>> series_;
  int64_t data_version_ = -1;  // PRAGMA data_version when series_ was last known valid
};

}  // namespace trainingd::daemon
