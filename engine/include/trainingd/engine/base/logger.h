// Logger: where the session and its hooks write their console lines.
//
// Lines keep TensorFlow's text ("loss = 0.31, accuracy = 0.9 (0.123 sec)", "Saving checkpoints
// for 1000 into DIR/model.ckpt."); the sink decides the prefix. The default writes
// "INFO:trainingd:<message>" to stderr, as TF's Python logging writes "INFO:tensorflow:...".
// The daemon gives each job its own logger.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace trainingd::engine {

enum class LogSeverity { kInfo, kWarning, kError };

// "INFO", "WARNING", "ERROR".
const char* LogSeverityName(LogSeverity severity);

class Logger {
 public:
  virtual ~Logger() = default;
  // Must be thread-safe: a session logs from its thread, a caller may log from another.
  virtual void Log(LogSeverity severity, std::string_view message) = 0;

  void Info(std::string_view message) { Log(LogSeverity::kInfo, message); }
  void Warning(std::string_view message) { Log(LogSeverity::kWarning, message); }
  void Error(std::string_view message) { Log(LogSeverity::kError, message); }

  // "<SEVERITY>:trainingd:<message>" lines on stderr, one write per line. Process-wide.
  static std::shared_ptr<Logger> Stderr();
};

}  // namespace trainingd::engine
