// The store's write side (private to daemon/src): the operations Store queues, and StoreWriter,
// which applies a batch of them in one transaction on the writer connection, keeping the scalar
// rollups (store_scalars.h) in step with the points.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

#include "store_sqlite.h"
#include "trainingd/daemon/store.h"
#include "trainingd/engine/status.h"

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
using WriteOp = std::variant<PutJobOp, UpdateJobStateOp, UpdateJobStepOp, AddScalarsOp,
                             DropScalarsAfterOp, DeleteJobOp>;

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
  // A point written in this batch whose rollup blocks are not updated yet.
  struct PendingPoint {
    int64_t step;
    double wall_time;
    double value;
    bool replaced;  // an older point at the same step was overwritten
  };
  struct PendingSeries {
    std::string job_id;
    std::string tag;
    std::vector<PendingPoint> points;
  };

  engine::Status Do(PutJobOp& op);
  engine::Status Do(UpdateJobStateOp& op);
  engine::Status Do(UpdateJobStepOp& op);
  engine::Status Do(AddScalarsOp& op);
  engine::Status Do(DropScalarsAfterOp& op);
  engine::Status Do(DeleteJobOp& op);

  engine::Status CheckScalars(const std::vector<ScalarRecord>& scalars);
  engine::Result<bool> JobExists(const std::string& id);
  PendingSeries& Pending(const std::string& job_id, const std::string& tag);
  // Brings the rollups up to date with every pending point.
  engine::Status FlushRollups();
  engine::Status MergeBlock(const PendingSeries& series, int level, int64_t block,
                            const PendingPoint* begin, const PendingPoint* end);
  // Rebuilds one rollup block from the level below (the points, for level 1).
  engine::Status RecomputeBlock(const std::string& job_id, const std::string& tag, int level,
                                int64_t block);
  engine::Result<std::vector<std::string>> Tags(const std::string& job_id);
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
  size_t last_pending_ = 0;  // pending_ index of the last series used, if pending_ is not empty
};

}  // namespace trainingd::daemon
