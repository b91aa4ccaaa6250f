// Flags: the one command-line parser of trainingd's subcommands -- "--name VALUE" flags (and short
// ones such as "-o" where declared) and positional arguments, with the usage text built from what
// is declared. Every error is an InvalidArgument whose message starts with the flag it is about,
// like the job spec's errors start with their field:
//
//   --steps: must be an integer in [1, 9223372036854775807], got 'abc'
//   --bogus: unknown flag (flags: --model, --steps, ...)
//   --model: missing value
//
// and RunWithFlags() prints it the same way for every subcommand ("trainingd train: <message>",
// then the usage, exit 2); -h / --help prints the usage and exits 0.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "trainingd/engine/base/status.h"

namespace trainingd::daemon {

class Flags {
 public:
  // Sets a flag's value; an error message (without the flag's name) or nullopt.
  using Handler = std::function<std::optional<std::string>(const std::string& value)>;

  // `command`: "train"; `synopsis`: what follows "usage: trainingd <command> " before the
  // flags; `about`: lines printed after the flags.
  Flags(std::string command, std::string synopsis = "", std::string about = "");

  // A flag with its own handler; `value` names its value in the usage ("N", "DIR").
  Flags& Add(const std::string& name, const std::string& value, const std::string& help,
             Handler handler);
  Flags& String(const std::string& name, const std::string& value, const std::string& help,
                std::string* out);
  // An integer in [lo, hi].
  Flags& Int(const std::string& name, const std::string& help, int64_t lo, int64_t hi,
             int64_t* out);
  Flags& Int(const std::string& name, const std::string& help, int64_t lo, int64_t hi, int* out);
  Flags& Int(const std::string& name, const std::string& help, int64_t lo, int64_t hi,
             std::optional<int64_t>* out);
  Flags& Uint(const std::string& name, const std::string& help, uint64_t* out);
  // A flag without a value ("-f", "--yes"): sets *out to true when given.
  Flags& Switch(const std::string& name, const std::string& help, bool* out);
  // A finite number > 0.
  Flags& Positive(const std::string& name, const std::string& help, std::optional<double>* out);
  // The positional arguments, at most `max` of them; "" when more are given names `what`.
  Flags& Positionals(const std::string& what, size_t max, std::vector<std::string>* out);

  // Parses `args`. Flags given twice: the last one wins. -h or --help in place of a flag stops
  // the parse and sets *help (when given).
  engine::Status Parse(const std::vector<std::string>& args, bool* help = nullptr) const;
  std::string Usage() const;
  const std::string& command() const { return command_; }

 private:
  struct Flag {
    std::string name, value, help;
    Handler handler;
    bool takes_value = true;
  };
  std::string command_, synopsis_, about_;
  std::vector<Flag> flags_;
  std::string positional_what_;
  size_t max_positionals_ = 0;
  std::vector<std::string>* positionals_ = nullptr;
};

// Parses `args` with `flags` and runs `body`: --help prints the usage (exit 0); a parse error
// prints "trainingd <command>: <message>" and the usage on stderr (exit 2). Otherwise `body`'s
// exit code.
int RunWithFlags(const Flags& flags, const std::vector<std::string>& args,
                 const std::function<int()>& body);

}  // namespace trainingd::daemon
