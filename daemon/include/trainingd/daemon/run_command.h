// `trainingd run JOB.json` and `trainingd validate JOB.json`: one job in the foreground, as
// running the tutorial script would, and a check of a spec without running it (docs/run.md).
#pragma once

#include <string>
#include <vector>

namespace trainingd::daemon {

// Exit codes: 0 the job completed; 1 it failed or could not start (missing data, a checkpoint of
// another model); 2 bad arguments or an invalid spec; 130 / 143 stopped by SIGINT / SIGTERM
// (after the final checkpoint).
int RunCommand(const std::vector<std::string>& args);
// Exit codes: 0 valid; 1 the dataset cannot be loaded or the model does not fit it; 2 bad
// arguments or an invalid spec.
int ValidateCommand(const std::vector<std::string>& args);

}  // namespace trainingd::daemon
