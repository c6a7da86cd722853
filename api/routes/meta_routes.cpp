// GET /metrics (Prometheus text: requests, latency, executor, jobs by state,
// workers alive) and GET /v1/openapi.json. Tested in tests/server/api_core_test.cpp.
#include "api/routes/routes.h"

#include "api/handler_util.h"
#include "common/embedded.h"
#include "db/sql.h"

namespace kforge {
extern const EmbeddedFile kApiDocuments[];  // api/openapi.json (api/CMakeLists.txt)
}  // namespace kforge

namespace kforge::api {

const char* openapi_document() { return kApiDocuments[0].text; }

void add_meta_routes(Router& router, ApiContext& ctx) {
  router.add("GET", "/metrics", [&ctx](HttpRequest&) {
    HttpResponse resp;
    resp.content_type = "text/plain; version=0.0.4; charset=utf-8";
    resp.body = ctx.metrics ? ctx.metrics->render() : "";
    return resp;
  });
  router.add(
      "GET", "/v1/openapi.json",
      [](HttpRequest&) {
        HttpResponse resp;
        resp.body = openapi_document();
        return resp;
      },
      /*runs_inline=*/true);
}

void add_v1_routes(Router& router, ApiContext& ctx) {
  add_meta_routes(router, ctx);
  add_admin_routes(router, ctx);
  add_leaderboard_routes(router, ctx);
  add_model_routes(router, ctx);
  add_op_routes(router, ctx);
  add_generation_routes(router, ctx);
  add_training_routes(router, ctx);
  add_evaluation_routes(router, ctx);
  add_job_routes(router, ctx);
}

}  // namespace kforge::api

namespace kforge::api {

void register_server_gauges(ApiContext& ctx, BoundedExecutor& executor) {
  if (!ctx.metrics) return;
  Metrics& metrics = *ctx.metrics;
  metrics.describe_gauge("kforge_executor_queued", "Handler tasks waiting for an executor thread.");
  metrics.describe_gauge("kforge_executor_running", "Handler tasks running on executor threads.");
  metrics.describe_gauge("kforge_executor_rejected_total", "Requests refused with 503 because the executor was full.");
  metrics.describe_gauge("kforge_jobs", "Jobs by kind and queue state.");
  metrics.describe_gauge("kforge_workers_alive", "Workers that heartbeated in the last 30 seconds.");
  metrics.add_gauges([&executor] {
    return std::vector<GaugeSample>{{"kforge_executor_queued", "", static_cast<double>(executor.queued())},
                                    {"kforge_executor_running", "", static_cast<double>(executor.running())},
                                    {"kforge_executor_rejected_total", "", static_cast<double>(executor.rejected())}};
  });
  metrics.add_gauges([&ctx] {
    std::vector<GaugeSample> samples;
    if (!ctx.pool) return samples;
    auto lease = ctx.pool->acquire();
    pqxx::read_transaction txn(*lease);
    samples.push_back({"kforge_workers_alive", "", txn.exec_params1(db::sql("api_workers_alive"), 30.0)[0].as<double>()});
    if (txn.exec1(db::sql("api_jobs_table_exists"))[0].as<bool>()) {
      for (const auto& row : txn.exec(db::sql("api_jobs_by_state"))) {
        samples.push_back({"kforge_jobs",
                           "kind=\"" + prometheus_escape(row[0].as<std::string>()) + "\",state=\"" +
                               prometheus_escape(row[1].as<std::string>()) + "\"",
                           row[2].as<double>()});
      }
    }
    return samples;
  });
}

}  // namespace kforge::api
