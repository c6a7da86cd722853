// Prometheus text-format metrics for the server: request counts by route and
// status, latency histograms by route, and gauges filled at scrape time.
// Rendered at GET /metrics; tested in tests/api/metrics_test.cpp.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace kforge::api {

//! One gauge sample: metric name, labels ("state=\"queued\""), value.
struct GaugeSample {
  std::string name;
  std::string labels;
  double value = 0;
};

class Metrics {
 public:
  //! Records one finished request (route is the pattern, "" for unmatched).
  void observe_request(const std::string& method, const std::string& route, int status, double seconds);
  //! Adds a source of gauges evaluated at each scrape (help text per metric name).
  void add_gauges(std::function<std::vector<GaugeSample>()> source);
  //! Declares HELP/TYPE text for a gauge name produced by a source.
  void describe_gauge(const std::string& name, const std::string& help);
  //! The whole exposition text.
  std::string render() const;

  //! Upper bounds (seconds) of the latency histogram buckets.
  static const std::array<double, 11>& buckets();

 private:
  struct Histogram {
    std::array<uint64_t, 11> counts{};
    uint64_t count = 0;
    double sum = 0;
  };
  mutable std::mutex mutex_;
  std::map<std::tuple<std::string, std::string, int>, uint64_t> requests_;
  std::map<std::string, Histogram> latency_;
  std::vector<std::function<std::vector<GaugeSample>()>> gauge_sources_;
  std::map<std::string, std::string> gauge_help_;
};

//! Escapes a Prometheus label value (backslash, quote, newline).
std::string prometheus_escape(const std::string& value);

}  // namespace kforge::api
