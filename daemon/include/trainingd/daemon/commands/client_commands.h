// The client of a running daemon: `trainingd jobs ...`, `trainingd experiments ...`,
// `trainingd datasets ...`,
// `trainingd completion bash|zsh` and `trainingd help exit-codes` (docs/cli.md). Each takes the
// arguments after its group's name and returns the process's exit code (client/exit_codes.h).
#pragma once

#include <string>
#include <vector>

namespace trainingd::daemon {

int JobsCommand(const std::vector<std::string>& args);
int ExperimentsCommand(const std::vector<std::string>& args);
int DatasetsCommand(const std::vector<std::string>& args);
// A daemon for a team (users_command.cpp): `users`, `tokens`, `whoami`, `audit`.
int UsersCommand(const std::vector<std::string>& args);
int TokensCommand(const std::vector<std::string>& args);
int WhoamiCommand(const std::vector<std::string>& args);
int AuditCommand(const std::vector<std::string>& args);
int CompletionCommand(const std::vector<std::string>& args);
// `trainingd help exit-codes`; anything else prints the commands.
int HelpTopicCommand(const std::vector<std::string>& args);

}  // namespace trainingd::daemon
