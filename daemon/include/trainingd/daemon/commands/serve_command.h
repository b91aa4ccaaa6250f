// `trainingd serve`: the daemon -- REST API, dashboard, job queue and workers, SQLite store
// (docs/operations.md). Runs until SIGTERM or SIGINT, then stops the running jobs after their
// current step with final checkpoints (they resume on the next start) and exits 0.
#pragma once

#include <string>
#include <vector>

namespace trainingd::daemon {

// Exit codes: 0 after a clean shutdown; 1 when it cannot start (database, address in use);
// 2 bad arguments or config.
int ServeCommand(const std::vector<std::string>& args);

}  // namespace trainingd::daemon
