// trainingd: the command-line entry point. It only dispatches to the daemon library's commands.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "trainingd/daemon/commands/export_command.h"
#include "trainingd/daemon/commands/run_command.h"
#include "trainingd/daemon/commands/serve_command.h"
#include "trainingd/daemon/commands/train_command.h"

namespace {
void Usage(FILE* f) {
  std::fprintf(
      f,
      "usage: trainingd <command> [options]\n"
      "commands:\n"
      "  serve     the daemon: REST API and dashboard (trainingd serve --help)\n"
      "  run       run a job spec in the foreground; again to resume (trainingd run --help)\n"
      "  validate  check a job spec without running it\n"
      "  train     train a tutorial model in the foreground (trainingd train --help)\n"
      "  export    a checkpoint directory's model as an ONNX file (trainingd export --help)\n");
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    Usage(stderr);
    return 2;
  }
  const std::string cmd = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  if (cmd == "train") return trainingd::daemon::TrainCommand(args);
  if (cmd == "serve") return trainingd::daemon::ServeCommand(args);
  if (cmd == "run") return trainingd::daemon::RunCommand(args);
  if (cmd == "validate") return trainingd::daemon::ValidateCommand(args);
  if (cmd == "export") return trainingd::daemon::ExportCommand(args);
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    Usage(stdout);
    return 0;
  }
  std::fprintf(stderr, "trainingd: unknown command '%s'\n", cmd.c_str());
  Usage(stderr);
  return 2;
}
