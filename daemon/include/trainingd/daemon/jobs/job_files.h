// JobFiles: the files of the daemon's jobs. Each job has a directory <data_dir>/jobs/<id>/ with
// its checkpoints, event files and profiler timelines (the engine writes those) and its log,
// which JobFiles owns.
//
// The log is log.txt, one line per entry. When it would grow past max_log_bytes it is rotated:
// renamed to log-<number of its first line>.txt, and the file rotated before it is deleted, so a
// job's log never takes much more than twice max_log_bytes. Line numbers count from the job's
// first line and go on across rotations and restarts; lines rotated away are gone. Each file
// keeps a sparse index of line offsets, so reading from a line seeks instead of reading the log
// from its start (the index is built once per daemon run, on the job's first use).
//
// Thread-safe; a job's log is locked per job.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "trainingd/api/job_service.h"
#include "trainingd/engine/base/status.h"

namespace trainingd::daemon {

struct JobFilesOptions {
  std::string data_dir = "var";               // jobs/<id>/ under it
  std::string jobs_dir;                       // <id>/ under it instead: "" = <data_dir>/jobs
  int64_t max_log_bytes = int64_t{16} << 20;  // per file; > 0
};

class JobFiles {
 public:
  explicit JobFiles(JobFilesOptions options);
  ~JobFiles();
  JobFiles(const JobFiles&) = delete;
  JobFiles& operator=(const JobFiles&) = delete;

  // <data_dir>/jobs/<id> (<jobs_dir>/<id>)
  std::string Dir(const std::string& id) const;
  // Creates the job's directory (and jobs/) if missing. IoError naming it.
  engine::Status CreateDir(const std::string& id);
  // Deletes the job's directory and forgets its log. IoError naming it.
  engine::Status Remove(const std::string& id);

  // Appends `line` to the job's log; a newline in it is written as a space, so one call is one
  // line. ResourceExhausted on a full disk, IoError otherwise; a failed append leaves no partial
  // line behind.
  engine::Status AppendLog(const std::string& id, std::string_view line);
  // Up to `limit` lines from line `from_line` (1-based) on, in order. Lines that were rotated away
  // are skipped, so the first one returned may come after `from_line`. None for a job without a
  // log or past its end.
  engine::Result<std::vector<api::LogLine>> ReadLog(const std::string& id, int64_t from_line,
                                                    int64_t limit);
  // Closes the log's descriptor (the job ended); the next append opens it again.
  void CloseLog(const std::string& id);

  const JobFilesOptions& options() const { return options_; }

 private:
  struct Log;
  // The job's log state, loaded from disk on first use.
  engine::Result<std::shared_ptr<Log>> LogFor(const std::string& id);

  const JobFilesOptions options_;
  std::mutex mu_;  // guards logs_ only
  std::map<std::string, std::shared_ptr<Log>> logs_;
};

}  // namespace trainingd::daemon
