// Public leaderboards: GET /v1/leaderboard/ops (best correct kernel per op,
// target, device) and GET /v1/leaderboard/models (fast_p per model version and
// suite). No token needed. Tested over HTTP in tests/server/api_resources_test.cpp.
#include "api/routes/routes.h"

#include "api/handler_util.h"
#include "db/leaderboards.h"

namespace kforge::api {
namespace {

json optional_number(const std::optional<double>& value) { return value ? json(*value) : json(nullptr); }

HttpResponse leaderboard_ops(ApiContext& ctx, HttpRequest& req) {
  return with_db(ctx, req, Scope::none, [&](pqxx::connection& conn, const Principal&) {
    PageRequest page;
    if (auto error = parse_page(req, &page)) return *error;
    std::vector<std::string> cursor = {"0", "", ""};
    int64_t after_op = 0;
    if (!page.after.empty() && (!decode_cursor(page.after, 3, &cursor) || !parse_id_cursor(cursor[0], &after_op))) {
      return problem(ErrorKind::bad_request, "after: not a cursor returned by /v1/leaderboard/ops",
                     {{"after", "malformed cursor"}});
    }
    std::string target = req.query.count("target") ? req.query.at("target") : "";
    auto rows = db::leaderboard_ops(conn, after_op, cursor[1], cursor[2], target, page.limit + 1);
    json items = json::array();
    std::optional<std::string> next;
    for (size_t row_idx = 0; row_idx < rows.size(); ++row_idx) {
      if (static_cast<int>(row_idx) == page.limit) {
        const auto& last = rows[row_idx - 1];
        next = encode_cursor({std::to_string(last.op_id), last.target, last.device});
        break;
      }
      const auto& row = rows[row_idx];
      json item = {{"op_id", row.op_id},   {"op_name", row.op_name},           {"target", row.target},
                   {"device", row.device}, {"candidate_id", row.candidate_id}, {"generation_id", row.job_id},
                   {"speedup", optional_number(row.speedup)},
                   {"kernel_ms", optional_number(row.kernel_ms)},
                   {"baseline_ms", optional_number(row.baseline_ms)},
                   {"created_at", row.created_at}};
      item["model_id"] = row.model_id ? json(row.model_id) : json(nullptr);
      items.push_back(std::move(item));
    }
    return page_response(std::move(items), next);
  });
}

HttpResponse leaderboard_models(ApiContext& ctx, HttpRequest& req) {
  return with_db(ctx, req, Scope::none, [&](pqxx::connection& conn, const Principal&) {
    PageRequest page;
    if (auto error = parse_page(req, &page)) return *error;
    std::vector<std::string> cursor = {"0", "", ""};
    int64_t after_model = 0;
    if (!page.after.empty() &&
        (!decode_cursor(page.after, 3, &cursor) || !parse_id_cursor(cursor[0], &after_model))) {
      return problem(ErrorKind::bad_request, "after: not a cursor returned by /v1/leaderboard/models",
                     {{"after", "malformed cursor"}});
    }
    std::string suite = req.query.count("suite") ? req.query.at("suite") : "";
    auto rows = db::leaderboard_models(conn, after_model, cursor[1], cursor[2], suite, page.limit + 1);
    json items = json::array();
    std::optional<std::string> next;
    for (size_t row_idx = 0; row_idx < rows.size(); ++row_idx) {
      if (static_cast<int>(row_idx) == page.limit) {
        const auto& last = rows[row_idx - 1];
        next = encode_cursor({std::to_string(last.model_id), last.suite, last.target});
        break;
      }
      const auto& row = rows[row_idx];
      items.push_back({{"model_id", row.model_id},
                       {"model", row.model_name + "@" + std::to_string(row.model_version)},
                       {"suite", row.suite},
                       {"target", row.target},
                       {"device", row.device},
                       {"evaluation_id", row.job_id},
                       {"metrics", parse_stored(row.metrics_json)},
                       {"created_at", row.created_at}});
    }
    return page_response(std::move(items), next);
  });
}

// Serves from the cache when fresh; otherwise computes and stores (200s only).
HttpResponse cached(ApiContext& ctx, HttpRequest& req, HttpResponse (*compute)(ApiContext&, HttpRequest&)) {
  if (!ctx.leaderboard_cache) return compute(ctx, req);
  std::string key = ResponseCache::key_of(req);
  if (auto hit = ctx.leaderboard_cache->get(key)) return *hit;
  HttpResponse resp = compute(ctx, req);
  ctx.leaderboard_cache->put(key, resp);
  return resp;
}

}  // namespace

void add_leaderboard_routes(Router& router, ApiContext& ctx) {
  router.add("GET", "/v1/leaderboard/ops", [&ctx](HttpRequest& req) { return cached(ctx, req, leaderboard_ops); });
  router.add("GET", "/v1/leaderboard/models",
             [&ctx](HttpRequest& req) { return cached(ctx, req, leaderboard_models); });
  // A fresh cached page is answered on the HTTP thread: no executor hand-off.
  auto from_cache = [&ctx](HttpRequest& req) -> std::optional<HttpResponse> {
    if (!ctx.leaderboard_cache) return std::nullopt;
    return ctx.leaderboard_cache->get(ResponseCache::key_of(req));
  };
  router.set_fast_path("GET", "/v1/leaderboard/ops", from_cache);
  router.set_fast_path("GET", "/v1/leaderboard/models", from_cache);
}

}  // namespace kforge::api
