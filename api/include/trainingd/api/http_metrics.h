// HttpMetrics: the HTTP layer's own Prometheus metrics, appended to JobService::Metrics() on
// GET /metrics. Labels are route templates ("/api/v1/jobs/{id}"), never raw paths, so the number of
// series stays bounded. Thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "trainingd/api/prometheus.h"

namespace trainingd::api {

class HttpMetrics {
 public:
  // Upper bounds (seconds) of the latency histogram buckets; +Inf is implied.
  static constexpr std::array<double, 12> kBuckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                      0.01,   0.025,   0.05,   0.1,   0.5,    2.5};

  // One answered request: trainingd_http_requests_total{route,method,status} and
  // trainingd_http_request_duration_seconds{route} (time spent producing the response).
  void RecordRequest(std::string_view route, std::string_view method, int status, double seconds);

  // Event streams: trainingd_http_event_streams (open now) and
  // trainingd_http_event_streams_dropped_total (closed because the client fell behind).
  void EventStreamOpened();
  void EventStreamClosed(bool dropped);

  // Connections: trainingd_http_connections_refused_total (closed at once because
  // max_connections were open), trainingd_http_accept_errors_total (accepts that failed for lack
  // of file descriptors, EMFILE/ENFILE) and trainingd_http_accept_paused (1 while the server
  // waits for descriptors to free up before accepting again).
  void ConnectionRefused();
  void AcceptFailed();
  void SetAcceptPaused(bool paused);

  // The number of requests recorded for (route, method, status); for tests.
  uint64_t RequestCount(std::string_view route, std::string_view method, int status) const;
  uint64_t EventStreamsDropped() const;
  uint64_t AcceptErrors() const;

  // The metrics as values (prometheus.h), and as Prometheus text.
  std::vector<Metric> Collect() const;
  std::string Exposition() const;

 private:
  struct Histogram {
    std::array<uint64_t, kBuckets.size()> counts{};  // non-cumulative
    uint64_t count = 0;
    double sum = 0;
  };

  mutable std::mutex mu_;
  std::map<std::tuple<std::string, std::string, int>, uint64_t, std::less<>> requests_;
  std::map<std::string, Histogram, std::less<>> latency_;
  int64_t streams_open_ = 0;
  uint64_t streams_dropped_ = 0;
  uint64_t connections_refused_ = 0;
  uint64_t accept_errors_ = 0;
  bool accept_paused_ = false;
};

}  // namespace trainingd::api
