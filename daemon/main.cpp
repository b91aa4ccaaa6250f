// trainingd: the command-line entry point. It only dispatches to the daemon library's commands.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "trainingd/daemon/commands/client_commands.h"
#include "trainingd/daemon/commands/db_command.h"
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
      "  export    a checkpoint directory's model as an ONNX file (trainingd export --help)\n"
      "  db        backup, restore, migrate, status of a data directory's database\n"
      "            (trainingd db --help)\n"
      "the client of a running daemon (--server URL or TRAININGD_URL; docs/cli.md):\n"
      "  jobs      submit, list, get, logs, watch, wait, stop, resume, delete, scalars,\n"
      "            checkpoints, export (trainingd jobs --help)\n"
      "  experiments  submit, list, get, trials, wait, stop, resume, delete\n"
      "            (trainingd experiments --help)\n"
      "  datasets  upload, list, get, delete (trainingd datasets --help)\n"
      "  users     create, list, get, update, delete (an admin's; trainingd users --help)\n"
      "  tokens    create, list, revoke (an admin's; trainingd tokens --help)\n"
      "  whoami    the user and role of this client's token\n"
      "  audit     the record of changes and refusals (an admin's)\n"
      "  completion bash|zsh   a shell completion script\n"
      "  help exit-codes       what the exit codes mean\n");
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
  if (cmd == "db") return trainingd::daemon::DbCommand(args);
  if (cmd == "jobs") return trainingd::daemon::JobsCommand(args);
  if (cmd == "experiments") return trainingd::daemon::ExperimentsCommand(args);
  if (cmd == "datasets") return trainingd::daemon::DatasetsCommand(args);
  if (cmd == "users") return trainingd::daemon::UsersCommand(args);
  if (cmd == "tokens") return trainingd::daemon::TokensCommand(args);
  if (cmd == "whoami") return trainingd::daemon::WhoamiCommand(args);
  if (cmd == "audit") return trainingd::daemon::AuditCommand(args);
  if (cmd == "completion") return trainingd::daemon::CompletionCommand(args);
  if (cmd == "help" && !args.empty()) {
    const int code = trainingd::daemon::HelpTopicCommand(args);
    if (code >= 0) return code;
    std::fprintf(stderr, "trainingd help: unknown topic '%s' (topics: exit-codes)\n",
                 args[0].c_str());
    return 2;
  }
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    Usage(stdout);
    return 0;
  }
  std::fprintf(stderr, "trainingd: unknown command '%s'\n", cmd.c_str());
  Usage(stderr);
  return 2;
}
