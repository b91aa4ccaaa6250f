#include "trainingd/api/http_metrics.h"

#include <cstdio>

namespace trainingd::api {
namespace {

// A bucket bound as its "le" label.
std::string FormatDouble(double value) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", value);
  return buf;
}

}  // namespace

void HttpMetrics::RecordRequest(std::string_view route, std::string_view method, int status,
                                double seconds) {
  std::lock_guard lock(mu_);
  auto key = std::make_tuple(std::string(route), std::string(method), status);
  ++requests_[key];
  auto it = latency_.find(route);
  if (it == latency_.end()) it = latency_.emplace(std::string(route), Histogram{}).first;
  Histogram& h = it->second;
  size_t bucket = 0;
  while (bucket < kBuckets.size() && seconds > kBuckets[bucket]) ++bucket;
  if (bucket < kBuckets.size()) ++h.counts[bucket];
  ++h.count;
  h.sum += seconds;
}

void HttpMetrics::EventStreamOpened() {
  std::lock_guard lock(mu_);
  ++streams_open_;
}

void HttpMetrics::EventStreamClosed(bool dropped) {
  std::lock_guard lock(mu_);
  --streams_open_;
  if (dropped) ++streams_dropped_;
}

void HttpMetrics::ConnectionRefused() {
  std::lock_guard lock(mu_);
  ++connections_refused_;
}

void HttpMetrics::AcceptFailed() {
  std::lock_guard lock(mu_);
  ++accept_errors_;
}

void HttpMetrics::SetAcceptPaused(bool paused) {
  std::lock_guard lock(mu_);
  accept_paused_ = paused;
}

uint64_t HttpMetrics::AcceptErrors() const {
  std::lock_guard lock(mu_);
  return accept_errors_;
}

uint64_t HttpMetrics::RequestCount(std::string_view route, std::string_view method,
                                   int status) const {
  std::lock_guard lock(mu_);
  auto it = requests_.find(std::make_tuple(std::string(route), std::string(method), status));
  return it == requests_.end() ? 0 : it->second;
}

uint64_t HttpMetrics::EventStreamsDropped() const {
  std::lock_guard lock(mu_);
  return streams_dropped_;
}

std::vector<Metric> HttpMetrics::Collect() const {
  std::lock_guard lock(mu_);
  Metric requests{"trainingd_http_requests_total",
                  "HTTP requests answered, by route, method, status.",
                  MetricType::kCounter,
                  {}};
  for (const auto& [key, count] : requests_) {
    const auto& [route, method, status] = key;
    requests.samples.push_back(
        {"",
         {{"route", route}, {"method", method}, {"status", std::to_string(status)}},
         static_cast<double>(count)});
  }
  Metric latency{"trainingd_http_request_duration_seconds",
                 "Time to produce a response, by route.",
                 MetricType::kHistogram,
                 {}};
  for (const auto& [route, h] : latency_) {
    uint64_t cumulative = 0;
    for (size_t i = 0; i < kBuckets.size(); ++i) {
      cumulative += h.counts[i];
      latency.samples.push_back({"_bucket",
                                 {{"route", route}, {"le", FormatDouble(kBuckets[i])}},
                                 static_cast<double>(cumulative)});
    }
    latency.samples.push_back(
        {"_bucket", {{"route", route}, {"le", "+Inf"}}, static_cast<double>(h.count)});
    latency.samples.push_back({"_sum", {{"route", route}}, h.sum});
    latency.samples.push_back({"_count", {{"route", route}}, static_cast<double>(h.count)});
  }
  return {std::move(requests),
          std::move(latency),
          SingleMetric("trainingd_http_event_streams", "Server-sent event streams open now.",
                       MetricType::kGauge, static_cast<double>(streams_open_)),
          SingleMetric("trainingd_http_event_streams_dropped_total",
                       "Event streams closed because the client fell behind.", MetricType::kCounter,
                       static_cast<double>(streams_dropped_)),
          SingleMetric("trainingd_http_connections_refused_total",
                       "Connections closed at once because max_connections were open.",
                       MetricType::kCounter, static_cast<double>(connections_refused_)),
          SingleMetric("trainingd_http_accept_errors_total",
                       "Accepts that failed for lack of file descriptors (EMFILE, ENFILE).",
                       MetricType::kCounter, static_cast<double>(accept_errors_)),
          SingleMetric("trainingd_http_accept_paused",
                       "1 while accepting waits for file descriptors to free up.",
                       MetricType::kGauge, accept_paused_ ? 1 : 0)};
}

std::string HttpMetrics::Exposition() const { return WritePrometheus(Collect()); }

}  // namespace trainingd::api
