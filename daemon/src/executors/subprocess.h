// Child processes started by argv, never a shell: what the MpiExecutor (mpirun) and the
// SlurmExecutor (sbatch, squeue, scancel) share.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "trainingd/engine/base/status.h"

namespace trainingd::daemon {

// A started child: its pid (also its process group) and the parent's ends of its stdin, stdout
// and stderr pipes.
struct Child {
  pid_t pid = 0;
  int in = -1, out = -1, err = -1;
};

// fork + exec of argv (PATH searched) with stdin, stdout and stderr on pipes. The child: its own
// process group (so the whole launch can be signalled), SIGKILL when the thread that started it
// exits (the daemon dies), default signal dispositions, an empty signal mask.
engine::Result<Child> Spawn(const std::vector<std::string>& argv);

// Splits what a pipe delivers into lines.
class LineReader {
 public:
  explicit LineReader(int fd) : fd_(fd) {}
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;
  // Reads what is there; false at end of file or error (the fd is closed then). A line longer
  // than 1 MiB is cut: no output can make the daemon hold unbounded memory.
  bool Read(std::vector<std::string>& lines);
  int fd() const { return fd_; }

 private:
  int fd_;
  std::string partial_;
};

// What a short command printed and how it ended.
struct CommandOutput {
  int status = 0;  // as waitpid gives it
  std::string out, err;
  bool ok() const;  // exited with 0
  // "exited with code 1: <the last line of stderr>", "was killed by signal 9", ...
  std::string Describe() const;
};

// Runs argv to its end, collecting stdout and stderr (each cut at `max_bytes`). Past `timeout_secs`
// its process group is killed: DeadlineExceeded. IoError if it cannot start (NotFound if the
// program does not exist).
engine::Result<CommandOutput> RunCommandOutput(const std::vector<std::string>& argv,
                                               double timeout_secs, size_t max_bytes = 64 << 20);

}  // namespace trainingd::daemon
