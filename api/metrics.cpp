// Metrics registry behind api/metrics.h. One mutex: a request costs one map
// update under it, far below the HTTP stack's own per-request cost.
// Test: ctest -R 'api_metrics_test|api_core_test' (GET /metrics).
#include "api/metrics.h"

#include <cstdio>
#include <exception>
#include <sstream>

#include "common/log.h"

namespace kforge::api {
namespace {

std::string format_number(double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", value);
  return buf;
}

}  // namespace

const std::array<double, 11>& Metrics::buckets() {
  static const std::array<double, 11> bounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                0.05,   0.1,   0.25,   1.0,   5.0};
  return bounds;
}

std::string prometheus_escape(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void Metrics::observe_request(const std::string& method, const std::string& route, int status, double seconds) {
  std::string label = route.empty() ? "unmatched" : route;
  std::lock_guard lock(mutex_);
  ++requests_[{method, label, status}];
  Histogram& hist = latency_[label];
  const auto& bounds = buckets();
  for (size_t bucket_idx = 0; bucket_idx < bounds.size(); ++bucket_idx) {
    if (seconds <= bounds[bucket_idx]) ++hist.counts[bucket_idx];
  }
  ++hist.count;
  hist.sum += seconds;
}

void Metrics::add_gauges(std::function<std::vector<GaugeSample>()> source) {
  std::lock_guard lock(mutex_);
  gauge_sources_.push_back(std::move(source));
}

void Metrics::describe_gauge(const std::string& name, const std::string& help) {
  std::lock_guard lock(mutex_);
  gauge_help_[name] = help;
}

std::string Metrics::render() const {
  std::ostringstream out;
  std::vector<std::function<std::vector<GaugeSample>()>> sources;
  std::map<std::string, std::string> help;
  {
    std::lock_guard lock(mutex_);
    out << "# HELP kforge_http_requests_total HTTP requests by method, route and status.\n"
        << "# TYPE kforge_http_requests_total counter\n";
    for (const auto& [key, count] : requests_) {
      const auto& [method, route, status] = key;
      out << "kforge_http_requests_total{method=\"" << prometheus_escape(method) << "\",route=\""
          << prometheus_escape(route) << "\",status=\"" << status << "\"} " << count << "\n";
    }
    out << "# HELP kforge_http_request_duration_seconds Request latency by route.\n"
        << "# TYPE kforge_http_request_duration_seconds histogram\n";
    const auto& bounds = buckets();
    for (const auto& [route, hist] : latency_) {
      std::string label = "route=\"" + prometheus_escape(route) + "\"";
      for (size_t bucket_idx = 0; bucket_idx < bounds.size(); ++bucket_idx) {
        char bound[32];
        std::snprintf(bound, sizeof bound, "%g", bounds[bucket_idx]);
        out << "kforge_http_request_duration_seconds_bucket{" << label << ",le=\"" << bound
            << "\"} " << hist.counts[bucket_idx] << "\n";
      }
      out << "kforge_http_request_duration_seconds_bucket{" << label << ",le=\"+Inf\"} " << hist.count << "\n";
      out << "kforge_http_request_duration_seconds_sum{" << label << "} " << format_number(hist.sum) << "\n";
      out << "kforge_http_request_duration_seconds_count{" << label << "} " << hist.count << "\n";
    }
    sources = gauge_sources_;
    help = gauge_help_;
  }
  // Gauge sources may query the database: run them outside the lock.
  std::map<std::string, std::vector<GaugeSample>> by_name;
  for (const auto& source : sources) {
    try {
      for (auto& sample : source()) by_name[sample.name].push_back(std::move(sample));
    } catch (const std::exception& e) {
      log_warn("metrics", "gauge source failed", {{"error", e.what()}});
    }
  }
  for (const auto& [name, samples] : by_name) {
    auto found = help.find(name);
    out << "# HELP " << name << " " << (found == help.end() ? name : found->second) << "\n";
    out << "# TYPE " << name << " gauge\n";
    for (const auto& sample : samples) {
      out << name;
      if (!sample.labels.empty()) out << "{" << sample.labels << "}";
      out << " " << format_number(sample.value) << "\n";
    }
  }
  return out.str();
}

}  // namespace kforge::api
