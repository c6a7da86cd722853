// Metrics (api/metrics.h): Prometheus text exposition of request counters,
// latency histograms (cumulative buckets) and gauge sources.
// Run: scripts/test.sh build -R api_metrics
#include <gtest/gtest.h>

#include "api/metrics.h"

TEST(Metrics, CountsRequestsAndBucketsLatencyCumulatively) {
  kforge::api::Metrics metrics;
  metrics.observe_request("GET", "/v1/ops/{id}", 200, 0.0007);
  metrics.observe_request("GET", "/v1/ops/{id}", 200, 0.03);
  metrics.observe_request("GET", "/v1/ops/{id}", 404, 0.002);
  metrics.observe_request("GET", "", 404, 0.001);
  std::string text = metrics.render();
  EXPECT_NE(text.find("kforge_http_requests_total{method=\"GET\",route=\"/v1/ops/{id}\",status=\"200\"} 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("route=\"unmatched\",status=\"404\"} 1"), std::string::npos) << text;
  // 0.0007 and 0.002 are <= 0.0025; 0.03 is not until 0.05.
  EXPECT_NE(text.find("kforge_http_request_duration_seconds_bucket{route=\"/v1/ops/{id}\",le=\"0.001\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("kforge_http_request_duration_seconds_bucket{route=\"/v1/ops/{id}\",le=\"0.0025\"} 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("kforge_http_request_duration_seconds_bucket{route=\"/v1/ops/{id}\",le=\"0.05\"} 3"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("kforge_http_request_duration_seconds_count{route=\"/v1/ops/{id}\"} 3"), std::string::npos);
  EXPECT_NE(text.find("# TYPE kforge_http_request_duration_seconds histogram"), std::string::npos);
}

TEST(Metrics, GaugeSourcesAreEvaluatedAtRenderAndFailuresAreSkipped) {
  kforge::api::Metrics metrics;
  int calls = 0;
  metrics.describe_gauge("kforge_jobs", "Jobs by state.");
  metrics.add_gauges([&] {
    ++calls;
    return std::vector<kforge::api::GaugeSample>{{"kforge_jobs", "state=\"queued\"", 3}};
  });
  metrics.add_gauges([]() -> std::vector<kforge::api::GaugeSample> { throw std::runtime_error("db down"); });
  std::string text = metrics.render();
  EXPECT_EQ(calls, 1);
  EXPECT_NE(text.find("# HELP kforge_jobs Jobs by state.\n# TYPE kforge_jobs gauge\nkforge_jobs{state=\"queued\"} 3"),
            std::string::npos)
      << text;
  EXPECT_EQ(kforge::api::prometheus_escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
}
