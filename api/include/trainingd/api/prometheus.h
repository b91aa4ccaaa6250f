// Metrics as plain values, and the one writer of the Prometheus text exposition format 0.0.4 for
// all of them: the service's (JobService::Metrics) and the HTTP layer's (HttpMetrics).
#pragma once

#include <string>
#include <vector>

namespace trainingd::api {

struct MetricLabel {
  std::string name;
  std::string value;  // any text; escaped when written
};

struct MetricSample {
  // "" for gauges and counters; for histograms "_bucket" (with an "le" label), "_sum", "_count".
  std::string suffix;
  std::vector<MetricLabel> labels;
  double value = 0;
};

enum class MetricType { kGauge, kCounter, kHistogram };

struct Metric {
  std::string name;  // "trainingd_jobs"
  std::string help;  // one line
  MetricType type = MetricType::kGauge;
  std::vector<MetricSample> samples;
};

// A metric with one unlabelled sample.
Metric SingleMetric(std::string name, std::string help, MetricType type, double value);

// "# HELP ...\n# TYPE ...\n<name><suffix>{labels} <value>\n" for each metric, in order. Values
// print as integers when they are integral, otherwise with 9 significant digits.
std::string WritePrometheus(const std::vector<Metric>& metrics);

}  // namespace trainingd::api
