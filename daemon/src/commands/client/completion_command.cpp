// `trainingd completion bash|zsh` and `trainingd help exit-codes` (docs/cli.md).
#include <cstdio>
#include <string>

#include "commands/client/client.h"
#include "trainingd/daemon/commands/client_commands.h"

namespace trainingd::daemon {
namespace {

// Commands, verbs and flags; job ids, experiment ids and dataset names come from the daemon
// itself (`trainingd jobs list -q`, ...), quietly nothing when it is not there.
constexpr const char* kBash =
    R"BASH(# trainingd completion for bash: source <(trainingd completion bash)
# The word after a verb of jobs or experiments ($cmd, $verb and $cur are _trainingd's): one of
# the verb's flags ($1), a spec file to submit, or an id from the daemon.
_trainingd_operand() {
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$1" -- "$cur"))
  elif [[ $verb == submit ]]; then
    COMPREPLY=($(compgen -f -- "$cur"))
  elif [[ $verb != list ]]; then
    COMPREPLY=($(compgen -W "$(trainingd "$cmd" list -q --limit 200 2>/dev/null)" -- "$cur"))
  fi
}
_trainingd() {
  local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]} verb=${COMP_WORDS[2]}
  local common="--server --token-file -o -q --help"
  if [[ $COMP_CWORD -eq 1 ]]; then
    COMPREPLY=($(compgen -W "jobs experiments datasets users tokens whoami audit completion help serve run validate train export db" -- "$cur"))
    return
  fi
  case $cmd in
    jobs)
      if [[ $COMP_CWORD -eq 2 ]]; then
        COMPREPLY=($(compgen -W "submit list get logs watch wait stop resume set-priority delete scalars checkpoints evaluation export" -- "$cur"))
        return
      fi
      local flags=$common
      case $verb in
        submit) flags="$common --set -f --follow" ;;
        list) flags="$common --state --limit -w --watch" ;;
        logs) flags="$common -f --follow --tail" ;;
        wait) flags="$common --timeout" ;;
        stop) flags="$common --wait" ;;
        resume) flags="$common --max-steps -f --follow" ;;
        set-priority) flags="$common --priority" ;;
        delete) flags="$common --yes" ;;
        scalars) flags="$common --tag --max-points" ;;
        export) flags="--server --token-file --step -o --help" ;;
      esac
      case ${COMP_WORDS[COMP_CWORD-1]} in
        --state) COMPREPLY=($(compgen -W "queued running stopping completed failed stopped" -- "$cur")); return ;;
        -o) [[ $verb == export ]] && { COMPREPLY=($(compgen -f -- "$cur")); return; }
            COMPREPLY=($(compgen -W "json jsonl csv" -- "$cur")); return ;;
      esac
      _trainingd_operand "$flags" ;;
    experiments)
      if [[ $COMP_CWORD -eq 2 ]]; then
        COMPREPLY=($(compgen -W "submit list get trials wait stop resume delete" -- "$cur"))
        return
      fi
      local flags=$common
      case $verb in
        submit) flags="$common --set --preview -f --follow" ;;
        list) flags="$common --state --limit" ;;
        trials) flags="$common --sort --desc --state --limit" ;;
        wait) flags="$common --timeout -f --follow" ;;
        stop) flags="$common --wait" ;;
        resume) flags="$common -f --follow" ;;
        delete) flags="$common --yes" ;;
      esac
      case ${COMP_WORDS[COMP_CWORD-1]} in
        --state)
          if [[ $verb == trials ]]; then
            COMPREPLY=($(compgen -W "running waiting pruned completed failed stopped" -- "$cur"))
          else
            COMPREPLY=($(compgen -W "running stopping completed failed stopped" -- "$cur"))
          fi
          return ;;
        --sort) COMPREPLY=($(compgen -W "index metric state global_step" -- "$cur")); return ;;
        -o) COMPREPLY=($(compgen -W "json jsonl csv" -- "$cur")); return ;;
      esac
      _trainingd_operand "$flags" ;;
    datasets)
      if [[ $COMP_CWORD -eq 2 ]]; then
        COMPREPLY=($(compgen -W "upload list get delete" -- "$cur"))
        return
      fi
      if [[ $cur == -* ]]; then
        local flags=$common
        [[ $verb == upload ]] && flags="$common --name --format --label-column --test-fraction --split-seed --normalize --test-file"
        [[ $verb == delete ]] && flags="$common --yes"
        COMPREPLY=($(compgen -W "$flags" -- "$cur"))
      elif [[ $verb == upload ]]; then
        COMPREPLY=($(compgen -f -- "$cur"))
      else
        COMPREPLY=($(compgen -W "$(trainingd datasets list -q 2>/dev/null)" -- "$cur"))
      fi ;;
    users)
      if [[ $COMP_CWORD -eq 2 ]]; then
        COMPREPLY=($(compgen -W "create list get update delete" -- "$cur"))
        return
      fi
      case ${COMP_WORDS[COMP_CWORD-1]} in
        --role) COMPREPLY=($(compgen -W "admin user viewer" -- "$cur")); return ;;
        -o) COMPREPLY=($(compgen -W "json jsonl csv" -- "$cur")); return ;;
      esac
      if [[ $cur == -* ]]; then
        local flags=$common
        [[ $verb == create ]] && flags="$common --role"
        [[ $verb == update ]] && flags="$common --role --disable --enable"
        [[ $verb == delete ]] && flags="$common --yes"
        COMPREPLY=($(compgen -W "$flags" -- "$cur"))
      elif [[ $verb != create && $verb != list ]]; then
        COMPREPLY=($(compgen -W "$(trainingd users list -q 2>/dev/null)" -- "$cur"))
      fi ;;
    tokens)
      if [[ $COMP_CWORD -eq 2 ]]; then
        COMPREPLY=($(compgen -W "create list revoke" -- "$cur"))
        return
      fi
      if [[ $cur == -* ]]; then
        local flags=$common
        [[ $verb == create ]] && flags="$common --expires-in"
        COMPREPLY=($(compgen -W "$flags" -- "$cur"))
      elif [[ $verb != revoke ]]; then
        COMPREPLY=($(compgen -W "$(trainingd users list -q 2>/dev/null)" -- "$cur"))
      fi ;;
    whoami) COMPREPLY=($(compgen -W "$common" -- "$cur")) ;;
    audit) COMPREPLY=($(compgen -W "$common --limit --before" -- "$cur")) ;;
    db)
      if [[ $COMP_CWORD -eq 2 ]]; then
        COMPREPLY=($(compgen -W "backup restore migrate status" -- "$cur"))
      elif [[ $cur == -* ]]; then
        local flags="--data-dir"
        [[ $verb == migrate ]] && flags="--data-dir --dry-run"
        COMPREPLY=($(compgen -W "$flags" -- "$cur"))
      else
        COMPREPLY=($(compgen -f -- "$cur"))
      fi ;;
    completion) COMPREPLY=($(compgen -W "bash zsh" -- "$cur")) ;;
    help) COMPREPLY=($(compgen -W "exit-codes" -- "$cur")) ;;
    *) COMPREPLY=($(compgen -f -- "$cur")) ;;
  esac
}
complete -F _trainingd trainingd
)BASH";

constexpr const char* kZshPrefix =
    "# trainingd completion for zsh: source <(trainingd completion zsh)\n"
    "autoload -U +X bashcompinit && bashcompinit\n";

}  // namespace

int CompletionCommand(const std::vector<std::string>& args) {
  if (args.size() == 1 && (args[0] == "-h" || args[0] == "--help")) {
    std::printf(
        "usage: trainingd completion bash|zsh\n"
        "Prints a completion script: source <(trainingd completion bash)\n");
    return 0;
  }
  if (args.size() != 1 || (args[0] != "bash" && args[0] != "zsh")) {
    std::fprintf(stderr, "usage: trainingd completion bash|zsh\n");
    return client::kExitUsage;
  }
  if (args[0] == "zsh") std::fputs(kZshPrefix, stdout);
  std::fputs(kBash, stdout);
  return 0;
}

int HelpTopicCommand(const std::vector<std::string>& args) {
  if (args.size() == 1 && args[0] == "exit-codes") {
    std::fputs(client::ExitCodesText(), stdout);
    return 0;
  }
  return -1;  // main prints the commands
}

}  // namespace trainingd::daemon
