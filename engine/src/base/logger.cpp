#include "trainingd/engine/base/logger.h"

#include <cstdio>
#include <string>

namespace trainingd::engine {
namespace {

class StderrLogger final : public Logger {
 public:
  void Log(LogSeverity severity, std::string_view message) override {
    std::string line = LogSeverityName(severity);
    line += ":trainingd:";
    line += message;
    line += '\n';
    // One fwrite per line: stdio locks the stream, so lines from threads do not interleave.
    std::fwrite(line.data(), 1, line.size(), stderr);
  }
};

}  // namespace

const char* LogSeverityName(LogSeverity severity) {
  switch (severity) {
    case LogSeverity::kInfo:
      return "INFO";
    case LogSeverity::kWarning:
      return "WARNING";
    case LogSeverity::kError:
      return "ERROR";
  }
  return "INFO";
}

std::shared_ptr<Logger> Logger::Stderr() {
  static const std::shared_ptr<Logger> logger = std::make_shared<StderrLogger>();
  return logger;
}

}  // namespace trainingd::engine
