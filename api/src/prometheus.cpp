#include "trainingd/api/prometheus.h"

#include <cmath>
#include <cstdio>
#include <utility>

namespace trainingd::api {
namespace {

std::string EscapeLabel(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

std::string FormatValue(double value) {
  char buf[32];
  if (std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 1e15) {
    std::snprintf(buf, sizeof(buf), "%.0f", value);
  } else {
    std::snprintf(buf, sizeof(buf), "%.9g", value);
  }
  return buf;
}

const char* MetricTypeName(MetricType type) {
  switch (type) {
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kCounter:
      return "counter";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

}  // namespace

Metric SingleMetric(std::string name, std::string help, MetricType type, double value) {
  return Metric{std::move(name), std::move(help), type, {MetricSample{"", {}, value}}};
}

std::string WritePrometheus(const std::vector<Metric>& metrics) {
  std::string out;
  for (const Metric& m : metrics) {
    out += "# HELP " + m.name + " " + m.help + "\n";
    out += "# TYPE " + m.name + " " + MetricTypeName(m.type) + "\n";
    for (const MetricSample& s : m.samples) {
      out += m.name + s.suffix;
      if (!s.labels.empty()) {
        out += '{';
        for (size_t i = 0; i < s.labels.size(); ++i) {
          if (i > 0) out += ',';
          out += s.labels[i].name + "=\"" + EscapeLabel(s.labels[i].value) + "\"";
        }
        out += '}';
      }
      // Appended piece by piece: in a unity build's translation unit GCC 12 wrongly warned of a
      // memcpy of over 2^63 bytes in " " + x + "\n" (-Wstringop-overflow).
      out += ' ';
      out += FormatValue(s.value);
      out += '\n';
    }
  }
  return out;
}

}  // namespace trainingd::api
