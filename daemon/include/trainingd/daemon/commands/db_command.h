// `trainingd db backup|restore|migrate|status`: the data directory's database without a daemon
// serving it (docs/operations.md#upgrading).
#pragma once

#include <string>
#include <vector>

namespace trainingd::daemon {

// Runs the command with its arguments (without "db"); returns the process exit code
// (`trainingd help exit-codes`): 0 done, 1 any failure (a daemon holds the directory, the file
// is not a trainingd store, I/O), 2 bad arguments, 6 the database, the file or the data directory
// was written by a newer trainingd.
int DbCommand(const std::vector<std::string>& args);

}  // namespace trainingd::daemon
