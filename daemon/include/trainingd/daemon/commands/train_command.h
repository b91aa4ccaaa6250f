// `trainingd train`: trains a preset on an MNIST-format directory in the foreground and prints
// its progress, like running the TensorFlow tutorial script.
#pragma once

#include <string>
#include <vector>

namespace trainingd::daemon {

// Runs the command with its arguments (without "train"); returns the process exit code:
// 0 on success, 2 for bad arguments (with a message on stderr), 1 for other failures.
int TrainCommand(const std::vector<std::string>& args);

}  // namespace trainingd::daemon
