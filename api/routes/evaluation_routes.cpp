// Evaluations: POST /v1/evaluations (model version x suite x target + settings, from
// spec/job_spec.h -> an evaluate job), GET list / one (status plus the metrics table once
// done: compile rate, fast_0, fast_1, fast_1.5, fast_2, geomean speedup, per task).
// Tested over HTTP in tests/server/api_resources_test.cpp.
#include "api/routes/routes.h"

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
  router.add("POST", "/v1/evaluations/{id}/cancel", [&ctx](HttpRequest& req) {
    return with_db(ctx, req, Scope::submit, [&](pqxx::connection& conn, const Principal&) {
      return cancel_job(conn, req, kEvalKinds, "evaluation", render_evaluation);
    });
  });
}

}  // namespace kforge::api
