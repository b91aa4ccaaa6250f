// `trainingd export CHECKPOINT_DIR [--step N] -o model.onnx`: a checkpoint directory's model as
// an ONNX file (docs/models.md), from its model.json and the latest checkpoint or that of step N.
#pragma once

#include <string>
#include <vector>

namespace trainingd::daemon {

// Runs the command with its arguments (without "export"); returns the process exit code: 0 when
// the file is written, 2 for bad arguments, 1 when the directory, its model.json or the
// checkpoint cannot be used (with the reason on stderr).
int ExportCommand(const std::vector<std::string>& args);

}  // namespace trainingd::daemon
