// Public leaderboards: GET /v1/leaderboard/ops (best correct kernel per op, target,
// device, ranked against PyTorch eager and torch.compile so that eager is named the
// winner when it is faster; filters target, device, level, op_id) and GET
// /v1/leaderboard/models (pass@1 and fast_p with intervals per model version and suite).
// No token needed. Tested over HTTP in tests/server/api_resources_test.cpp.
#include "api/routes/routes.h"

#include <algorithm>
#include <cstdio>

#include "api/handler_util.h"
#include "db/leaderboards.h"

namespace kforge::api {
namespace {

json optional_number(const std::optional<double>& value) { return value ? json(*value) : json(nullptr); }

// The op's contenders ranked by speed relative to eager: the best verified kernel,
// PyTorch eager itself (1.0) and torch.compile where the device timed it (eager time /
// compile time = kernel-vs-eager / kernel-vs-compile). A kernel slower than eager is
// ranked below it, and the row's winner and verdict say so (issue 14: never present a
// slower kernel as the answer).
void add_ranking(const db::OpLeaderRow& row, json* item) {
  std::vector<json> entries;
  double kernel = row.speedup.value_or(0.0);
  if (!(kernel > 0)) {  // verified but never timed: nothing to rank
    (*item)["winner"] = nullptr;
    (*item)["eager_wins"] = false;
    (*item)["verdict"] = "the kernel is verified but was not timed against eager";
    (*item)["ranking"] = json::array();
    return;
  }
  entries.push_back({{"entry", "kernel"}, {"candidate_id", row.candidate_id}, {"speedup_vs_eager", kernel}});
  entries.push_back({{"entry", "pytorch_eager"}, {"candidate_id", nullptr}, {"speedup_vs_eager", 1.0}});
  if (row.speedup_vs_compile && *row.speedup_vs_compile > 0 && kernel > 0)
    entries.push_back(
        {{"entry", "torch_compile"}, {"candidate_id", nullptr}, {"speedup_vs_eager", kernel / *row.speedup_vs_compile}});
  // Stable: on a tie the kernel (listed first) keeps its place.
  std::stable_sort(entries.begin(), entries.end(), [](const json& a, const json& b) {
    return a["speedup_vs_eager"].get<double>() > b["speedup_vs_eager"].get<double>();
  });
  for (size_t rank = 0; rank < entries.size(); ++rank) entries[rank]["rank"] = rank + 1;
  std::string winner = entries[0]["entry"];
  char ratio[64];
  std::snprintf(ratio, sizeof ratio, "%.2fx", kernel);
  std::string verdict;
  if (winner == "kernel") {
    verdict = std::string("the verified kernel is fastest: ") + ratio + " of PyTorch eager's speed";
  } else {
    verdict = std::string(winner == "pytorch_eager" ? "PyTorch eager" : "torch.compile") +
              " is faster than every verified kernel (the best runs at " + ratio + " of eager's speed); use it for this op";
  }
  (*item)["winner"] = winner;
  (*item)["eager_wins"] = winner == "pytorch_eager";
  (*item)["verdict"] = verdict;
  (*item)["ranking"] = entries;
}

// target, device (exact strings), level (1-9) and op_id (one op) narrow the ops board.
std::optional<HttpResponse> parse_filter(const HttpRequest& req, db::OpLeaderFilter* filter) {
  auto text = [&req](const char* name) { return req.query.count(name) ? req.query.at(name) : std::string(); };
  filter->target = text("target");
  filter->device = text("device");
  int64_t number = 0;
  if (!text("level").empty()) {
    if (!parse_path_id(text("level"), &number) || number > 9) {
      return problem(ErrorKind::bad_request, "level must be an integer from 1 to 9", {{"level", "must be 1-9"}});
    }
    filter->level = static_cast<int>(number);
  }
  if (!text("op_id").empty()) {
    if (!parse_path_id(text("op_id"), &number)) {
      return problem(ErrorKind::bad_request, "op_id must be a positive integer", {{"op_id", "must be an op id"}});
    }
    filter->op_id = number;
  }
  return std::nullopt;
}

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
    db::OpLeaderFilter filter;
    if (auto error = parse_filter(req, &filter)) return *error;
    auto rows = db::leaderboard_ops(conn, after_op, cursor[1], cursor[2], filter, page.limit + 1);
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
                   {"speedup_vs_eager", optional_number(row.speedup)},
                   {"speedup_vs_compile", optional_number(row.speedup_vs_compile)},
                   {"kernel_ms", optional_number(row.kernel_ms)},
                   {"baseline_ms", optional_number(row.baseline_ms)},
                   {"created_at", row.created_at}};
      item["model_id"] = row.model_id ? json(row.model_id) : json(nullptr);
      item["level"] = row.level > 0 ? json(row.level) : json(nullptr);
      item["generator"] = row.generator.empty() ? json(nullptr) : json(row.generator);
      add_ranking(row, &item);
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
