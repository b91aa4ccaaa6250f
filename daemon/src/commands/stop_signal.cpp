#include "commands/stop_signal.h"

#include <unistd.h>

#include <csignal>

namespace trainingd::daemon {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_signal{0};

void OnSignal(int sig) {
  if (g_stop.exchange(true)) _exit(128 + sig);  // a second Ctrl-C: give up at once
  g_signal.store(sig);
  static const char kMsg[] =
      "trainingd: stopping after the current step with a final checkpoint "
      "(Ctrl-C again to abort without one)\n";
  const ssize_t ignored = write(STDERR_FILENO, kMsg, sizeof kMsg - 1);
  (void)ignored;
}

}  // namespace

std::atomic<bool>& StopRequested() { return g_stop; }
int StopSignal() { return g_signal.load(); }

void InstallStopSignals() {
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
}

void RestoreStopSignals() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

}  // namespace trainingd::daemon
