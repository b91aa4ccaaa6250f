#include "trainingd/api/http_metrics.h"

#include <cstdio>

namespace trainingd::api {
namespace {

// Label values are route templates and methods, but escape anyway (Prometheus text format rule).
std::string EscapeLabel(std::string_view value) {
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

std::string HttpMetrics::Exposition() const {
  std::lock_guard lock(mu_);
  std::string out;
  out += "# HELP trainingd_http_requests_total HTTP requests answered, by route, method, status.\n";
  out += "# TYPE trainingd_http_requests_total counter\n";
  for (const auto& [key, count] : requests_) {
    const auto& [route, method, status] = key;
    out += "trainingd_http_requests_total{route=\"" + EscapeLabel(route) + "\",method=\"" +
           EscapeLabel(method) + "\",status=\"" + std::to_string(status) + "\"} " +
           std::to_string(count) + "\n";
  }
  out += "# HELP trainingd_http_request_duration_seconds Time to produce a response, by route.\n";
  out += "# TYPE trainingd_http_request_duration_seconds histogram\n";
  for (const auto& [route, h] : latency_) {
    std::string label = "route=\"" + EscapeLabel(route) + "\"";
    uint64_t cumulative = 0;
    for (size_t i = 0; i < kBuckets.size(); ++i) {
      cumulative += h.counts[i];
      out += "trainingd_http_request_duration_seconds_bucket{" + label + ",le=\"" +
             FormatDouble(kBuckets[i]) + "\"} " + std::to_string(cumulative) + "\n";
    }
    out += "trainingd_http_request_duration_seconds_bucket{" + label + ",le=\"+Inf\"} " +
           std::to_string(h.count) + "\n";
    out +=
        "trainingd_http_request_duration_seconds_sum{" + label + "} " + FormatDouble(h.sum) + "\n";
    out += "trainingd_http_request_duration_seconds_count{" + label + "} " +
           std::to_string(h.count) + "\n";
  }
  out += "# HELP trainingd_http_event_streams Server-sent event streams open now.\n";
  out += "# TYPE trainingd_http_event_streams gauge\n";
  out += "trainingd_http_event_streams " + std::to_string(streams_open_) + "\n";
  out +=
      "# HELP trainingd_http_event_streams_dropped_total Event streams closed because the "
      "client fell behind.\n";
  out += "# TYPE trainingd_http_event_streams_dropped_total counter\n";
  out += "trainingd_http_event_streams_dropped_total " + std::to_string(streams_dropped_) + "\n";
  out +=
      "# HELP trainingd_http_connections_refused_total Connections closed at once because "
      "max_connections were open.\n";
  out += "# TYPE trainingd_http_connections_refused_total counter\n";
  out += "trainingd_http_connections_refused_total " + std::to_string(connections_refused_) + "\n";
  out +=
      "# HELP trainingd_http_accept_errors_total Accepts that failed for lack of file "
      "descriptors (EMFILE, ENFILE).\n";
  out += "# TYPE trainingd_http_accept_errors_total counter\n";
  out += "trainingd_http_accept_errors_total " + std::to_string(accept_errors_) + "\n";
  out +=
      "# HELP trainingd_http_accept_paused 1 while accepting waits for file descriptors to free "
      "up.\n";
  out += "# TYPE trainingd_http_accept_paused gauge\n";
  out += "trainingd_http_accept_paused " + std::string(accept_paused_ ? "1" : "0") + "\n";
  return out;
}

}  // namespace trainingd::api
