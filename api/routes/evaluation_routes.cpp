// Evaluations: POST /v1/evaluations (model version x suite x target + settings, from
// spec/job_spec.h -> an evaluate job), GET list / one (status plus the metrics table once
// done: pass@1 / pass@k, fast_p vs eager and torch.compile, rule-violation rate with 95%
// bootstrap intervals over ops, per task), and GET /{id}/compare?baseline=B (per-op deltas
// with a paired interval: api/evaluation_compare.h). Tested over HTTP in
// tests/server/api_resources_test.cpp and tests/worker/jobs/training_jobs_test.cpp.
#include "api/routes/routes.h"

#include "api/evaluation_compare.h"
#include "api/handler_util.h"
#include "api/job_view.h"
#include "db/models.h"
#include "spec/job_spec.h"

namespace kforge::api {
namespace {

const std::vector<std::string> kEvalKinds = {"evaluate"};

json render_evaluation(pqxx::connection& conn, const db::Job& job) {
  json out = job_common_json(job, "evaluation");
  json args = parse_stored(job.args_json);
  for (const char* key : {"model", "model_id", "suite", "target", "settings"}) {
    out[key] = args.is_object() && args.contains(key) ? args[key] : json(nullptr);
  }
  auto stored = db::evaluation_get_by_job(conn, job.id);
  out["metrics"] = stored ? parse_stored(stored->metrics_json) : json(nullptr);
  out["tasks"] = stored ? parse_stored(stored->tasks_json) : json(nullptr);
  out["device"] = stored ? json(stored->device) : json(nullptr);
  return out;
}

HttpResponse create_evaluation(ApiContext& ctx, HttpRequest& req) {
  return with_post(ctx, req, Scope::submit, [&](pqxx::connection& conn, const Principal& principal, const json& body) {
    auto read = spec::read_evaluate(body, spec::Source::request);
    if (!read.ok()) return field_problem(read.errors);
    const spec::EvaluateArgs& request = read.args;
    std::string name;
    int version = 0;
    spec::parse_model_ref(request.model, &name, &version);  // the reader checked its form
    auto found = db::model_find(conn, name, version);
    if (!found) return field_problem({{"model", "no model '" + request.model + "'"}});
    json args = read.stored;  // every setting with its default, as the worker reads it back
    args["model"] = found->name + "@" + std::to_string(found->version);
    args["model_id"] = found->id;
    db::JobInsert insert;
    insert.kind = "evaluate";
    insert.priority = request.priority;
    insert.args_json = args.dump();
    return enqueue_job(conn, req, principal, insert, "/v1/evaluations", render_evaluation);
  }, job_replay("/v1/evaluations", render_evaluation));
}

// The header of one side of a comparison: which evaluation, model, suite, device.
json comparison_side(pqxx::connection& conn, const db::Job& job) {
  json full = render_evaluation(conn, job);
  json side = json::object();
  for (const char* key : {"id", "model", "model_id", "suite", "target", "device", "status"}) side[key] = full[key];
  return side;
}

// GET /v1/evaluations/{id}/compare?baseline=B: {id} against B, op by op (deltas = {id} - B).
HttpResponse compare_evaluations(pqxx::connection& conn, HttpRequest& req) {
  std::string baseline_text = req.query.count("baseline") ? req.query.at("baseline") : "";
  int64_t baseline_id = 0;
  if (!parse_path_id(baseline_text, &baseline_id))
    return problem(ErrorKind::bad_request, "baseline must be the id of an evaluation to compare against",
                   {{"baseline", "must be an evaluation id"}});
  auto job = job_of_kind(conn, req.path_params["id"], kEvalKinds);
  if (!job) return problem(ErrorKind::not_found, "no evaluation " + req.path_params["id"]);
  auto baseline = job_of_kind(conn, baseline_text, kEvalKinds);
  if (!baseline) return problem(ErrorKind::not_found, "no evaluation " + baseline_text + " (the baseline)");
  auto evaluation_row = db::evaluation_get_by_job(conn, job->id);
  auto baseline_row = db::evaluation_get_by_job(conn, baseline->id);
  json evaluation_side = comparison_side(conn, *job), baseline_side = comparison_side(conn, *baseline);
  for (const json* side : {&evaluation_side, &baseline_side}) {
    bool stored = side == &evaluation_side ? evaluation_row.has_value() : baseline_row.has_value();
    if (!stored)
      return problem(ErrorKind::conflict, "evaluation " + (*side)["id"].dump() + " is " +
                                              (*side)["status"].get<std::string>() +
                                              "; only finished evaluations with metrics can be compared");
  }
  json out = compare_evaluation_tasks(parse_stored(baseline_row->tasks_json), parse_stored(evaluation_row->tasks_json));
  out["object"] = "evaluation_comparison";
  out["baseline"] = baseline_side;
  out["evaluation"] = evaluation_side;
  out["same_suite"] = baseline_row->suite == evaluation_row->suite;
  return json_response(200, out);
}

}  // namespace

void add_evaluation_routes(Router& router, ApiContext& ctx) {
  router.add("POST", "/v1/evaluations", [&ctx](HttpRequest& req) { return create_evaluation(ctx, req); });
  router.add("GET", "/v1/evaluations", [&ctx](HttpRequest& req) {
    return with_db(ctx, req, Scope::none, [&](pqxx::connection& conn, const Principal&) {
      return list_jobs(conn, req, kEvalKinds, render_evaluation);
    });
  });
  router.add("GET", "/v1/evaluations/{id}", [&ctx](HttpRequest& req) {
    return with_db(ctx, req, Scope::none, [&](pqxx::connection& conn, const Principal&) {
      auto job = job_of_kind(conn, req.path_params["id"], kEvalKinds);
      if (!job) return problem(ErrorKind::not_found, "no evaluation " + req.path_params["id"]);
      return json_response(200, render_evaluation(conn, *job));
    });
  });
  router.add("GET", "/v1/evaluations/{id}/compare", [&ctx](HttpRequest& req) {
    return with_db(ctx, req, Scope::none,
                   [&](pqxx::connection& conn, const Principal&) { return compare_evaluations(conn, req); });
  });
  router.add("POST", "/v1/evaluations/{id}/cancel", [&ctx](HttpRequest& req) {
    return with_db(ctx, req, Scope::submit, [&](pqxx::connection& conn, const Principal&) {
      return cancel_job(conn, req, kEvalKinds, "evaluation", render_evaluation);
    });
  });
}

}  // namespace kforge::api
