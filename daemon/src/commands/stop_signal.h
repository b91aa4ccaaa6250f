// The foreground commands' Ctrl-C: the first SIGINT or SIGTERM asks the run to stop after the
// current step (with a final checkpoint); a second one exits at once.
#pragma once

#include <atomic>

namespace trainingd::daemon {

// The flag the handlers set; hand it to engine::JobRunOptions::stop.
std::atomic<bool>& StopRequested();
// The signal that set it, 0 while none has.
int StopSignal();

// Installs the handlers for SIGINT and SIGTERM; RestoreStopSignals puts the defaults back.
void InstallStopSignals();
void RestoreStopSignals();

}  // namespace trainingd::daemon
