// The systemd notification protocol (sd_notify(3)), spoken directly over $NOTIFY_SOCKET so the
// daemon needs no libsystemd: READY=1 once serving, WATCHDOG=1 heartbeats, STOPPING=1 on
// shutdown, STATUS=... for `systemctl status`.
#pragma once

#include <optional>
#include <string>

namespace trainingd::daemon {

// Sends `message` as one datagram to $NOTIFY_SOCKET (a path, or "@name" for the abstract
// namespace). False when the variable is unset (not under systemd) or the send failed.
bool SdNotify(const std::string& message);

// Half of $WATCHDOG_USEC in seconds (how often to send WATCHDOG=1) when systemd enabled the
// watchdog for this process ($WATCHDOG_PID unset or ours); nullopt otherwise.
std::optional<double> WatchdogPingInterval();

}  // namespace trainingd::daemon
