// Env: the clocks and sleeping the session and its hooks use, injectable so tests can drive time
// (LevelDB's Env idea, reduced to what the engine needs).
#pragma once

namespace trainingd::engine {

class Env {
 public:
  virtual ~Env() = default;
  // Seconds since the Unix epoch (timestamps in event files and checkpoints).
  virtual double NowSeconds() = 0;
  // Seconds on a monotonic clock (timers, durations).
  virtual double NowMonotonic() = 0;
  virtual void SleepForSeconds(double seconds) = 0;

  // The real clocks. Thread-safe; lives for the whole process.
  static Env* Default();
};

}  // namespace trainingd::engine
