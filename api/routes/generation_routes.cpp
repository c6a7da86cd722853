// Generations: POST /v1/generations (op id or inline op, target, model, samples,
// time budget) -> 202 with the job; GET list / one (status, progress, best
// kernel with speedup and source, timestamps, error); /candidates; /cancel.
// Tested over HTTP in tests/server/api_resources_test.cpp.
#include "api/routes/routes.h"

#include "api/candidate_view.h"
#include "api/handler_util.h"
#include "api/job_view.h"
#include "api/op_submit.h"
#include "db/models.h"
#include "db/ops.h"

namespace kforge::api {
namespace {

const std::vector<std::string> kGenerateKinds = {"generate"};

json render_generation(pqxx::connection& conn, const db::Job& job) {
  json out = job_common_json(job, "generation");
  json args = parse_stored(job.args_json);
  for (const char* key : {"op_id", "target", "model", "model_id", "samples", "time_budget_s", "seed"}) {
    out[key] = args.is_object() && args.contains(key) ? args[key] : json(nullptr);
  }
  auto best = db::candidate_best_for_job(conn, job.id);
  out["best"] = best ? candidate_json(*best, true) : json(nullptr);
  json counts = json::object();
  int64_t total = 0;
  for (const auto& [outcome, count] : db::candidate_counts_for_job(conn, job.id)) {
    counts[outcome] = count;
    total += count;
  }
  out["candidates"] = {{"total", total}, {"by_outcome", counts}};
  json result = parse_stored(job.result_json);
  out["result"] = result;
  return out;
}

// "kforge-tiny" or "kforge-tiny@3"; false when malformed.
bool parse_model_ref(const std::string& ref, std::string* name, int* version) {
  auto at = ref.find('@');
  *name = ref.substr(0, at);
  *version = 0;
  if (name->empty() || name->size() > 100) return false;
  if (at == std::string::npos) return true;
  std::string digits = ref.substr(at + 1);
  if (digits.empty() || digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos) return false;
  *version = std::stoi(digits);
  return *version > 0;
}

HttpResponse create_generation(ApiContext& ctx, HttpRequest& req) {
  return with_post(ctx, req, Scope::submit, [&](pqxx::connection& conn, const Principal& principal, const json& body) {
    FieldReader fields(body);
    fields.only({"op_id", "op", "target", "model", "samples", "time_budget_s", "seed", "priority"});
    int64_t op_id = fields.integer("op_id", false, 0, 1, INT64_MAX);
    const json* inline_op = fields.object("op", false);
    std::string target = fields.choice("target", false, "opencl", {"opencl", "cuda", "triton"});
    std::string model = fields.string("model", false, "kforge-tiny", 120);
    int64_t samples = fields.integer("samples", false, 8, 1, 256);
    int64_t budget = fields.integer("time_budget_s", false, 600, 1, 86400);
    int64_t seed = fields.integer("seed", false, 0, 0, INT64_MAX);
    int64_t priority = fields.integer("priority", false, 2, 0, 9);
    bool has_op_id = body.contains("op_id") && !body["op_id"].is_null();
    if (has_op_id == (inline_op != nullptr) && fields.ok()) {
      fields.fail("op_id", "give exactly one of op_id or op (an inline op)");
    }
    std::string model_name;
    int model_version = 0;
    if (!parse_model_ref(model, &model_name, &model_version)) {
      fields.fail("model", "must be a model name or name@version, such as kforge-tiny@2");
    }
    if (!fields.ok()) return fields.response();

    std::optional<db::OpRecord> op;
    if (inline_op) {
      OpSubmit submitted = submit_op(ctx, conn, principal, *inline_op, "op.");
      if (submitted.error) return *submitted.error;
      op = submitted.op;
    } else {
      op = db::op_get(conn, op_id);
      if (!op) return problem(ErrorKind::unprocessable, "no op " + std::to_string(op_id), {{"op_id", "no such op"}});
    }
    auto model_row = db::model_find(conn, model_name, model_version);
    if (model_version > 0 && !model_row) {
      return problem(ErrorKind::unprocessable, "no model " + model, {{"model", "no such model version"}});
    }
    json args = {{"op_id", op->id}, {"target", target},       {"model", model},
                 {"samples", samples}, {"time_budget_s", budget}, {"seed", seed}};
    args["model_id"] = model_row ? json(model_row->id) : json(nullptr);
    db::JobInsert insert;
    insert.kind = "generate";
    insert.priority = static_cast<int>(priority);
    insert.args_json = args.dump();
    return enqueue_job(conn, req, principal, insert, "/v1/generations", render_generation);
  });
}

HttpResponse get_generation(ApiContext& ctx, HttpRequest& req) {
  return with_db(ctx, req, Scope::none, [&](pqxx::connection& conn, const Principal&) {
    auto job = job_of_kind(conn, req.path_params["id"], kGenerateKinds);
    if (!job) return problem(ErrorKind::not_found, "no generation " + req.path_params["id"]);
    return json_response(200, render_generation(conn, *job));
  });
}

HttpResponse list_candidates(ApiContext& ctx, HttpRequest& req) {
  return with_db(ctx, req, Scope::none, [&](pqxx::connection& conn, const Principal&) {
    auto job = job_of_kind(conn, req.path_params["id"], kGenerateKinds);
    if (!job) return problem(ErrorKind::not_found, "no generation " + req.path_params["id"]);
    PageRequest page;
    if (auto error = parse_page(req, &page)) return *error;
    int64_t after = 0;
    if (!parse_id_cursor(page.after, &after)) {
      return problem(ErrorKind::bad_request, "after: not a candidate cursor", {{"after", "malformed cursor"}});
    }
    auto candidates = db::candidate_list_for_job(conn, job->id, after, page.limit + 1);
    json items = json::array();
    std::optional<std::string> next;
    for (size_t cand_idx = 0; cand_idx < candidates.size(); ++cand_idx) {
      if (static_cast<int>(cand_idx) == page.limit) {
        next = std::to_string(candidates[cand_idx - 1].id);
        break;
      }
      items.push_back(candidate_json(candidates[cand_idx], true));
    }
    return page_response(std::move(items), next);
  });
}

}  // namespace

void add_generation_routes(Router& router, ApiContext& ctx) {
  router.add("POST", "/v1/generations", [&ctx](HttpRequest& req) { return create_generation(ctx, req); });
  router.add("GET", "/v1/generations", [&ctx](HttpRequest& req) {
    return with_db(ctx, req, Scope::none, [&](pqxx::connection& conn, const Principal&) {
      return list_jobs(conn, req, kGenerateKinds, render_generation);
    });
  });
  router.add("GET", "/v1/generations/{id}", [&ctx](HttpRequest& req) { return get_generation(ctx, req); });
  router.add("GET", "/v1/generations/{id}/candidates", [&ctx](HttpRequest& req) { return list_candidates(ctx, req); });
  router.add("POST", "/v1/generations/{id}/cancel", [&ctx](HttpRequest& req) {
    return with_db(ctx, req, Scope::submit, [&](pqxx::connection& conn, const Principal&) {
      return cancel_job(conn, req, kGenerateKinds, "generation", render_generation);
    });
  });
}

}  // namespace kforge::api
