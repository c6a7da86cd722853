// Evaluations: POST /v1/evaluations (model version x suite x target -> an
// evaluate job), GET list / one (status plus the metrics table once done:
// compile rate, fast_0, fast_1, fast_1.5, fast_2, geomean speedup, per task).
// Tested over HTTP in tests/server/api_resources_test.cpp.
#include "api/routes/routes.h"

#include "api/handler_util.h"
#include "api/job_view.h"
#include "db/models.h"

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

// How the evaluator samples and checks (worker/jobs/evaluate.cpp); every default is
// echoed back. limit_ops 0 = every op of the split; max_check_elements 0 = full shapes.
json evaluation_settings(FieldReader& fields) {
  json out;
  out["samples"] = fields.integer("samples", false, 4, 1, 256);
  out["k"] = fields.integer("k", false, out["samples"].get<int64_t>(), 1, 256);
  if (out["k"].get<int64_t>() > out["samples"].get<int64_t>()) fields.fail("k", "must be at most samples");
  out["limit_ops"] = fields.integer("limit_ops", false, 0, 0, 100000);
  out["max_new_tokens"] = fields.integer("max_new_tokens", false, 768, 1, 65536);
  out["temperature"] = fields.number("temperature", false, 0.8, 0.01, 5);
  out["top_p"] = fields.number("top_p", false, 0.95, 0.01, 1);
  out["seed"] = fields.integer("seed", false, 1234, 0, 2147483647);
  out["max_check_elements"] = fields.integer("max_check_elements", false, 0, 0, 1000000000);
  out["check_trials"] = fields.integer("check_trials", false, 3, 1, 20);
  out["check_threads"] = fields.integer("check_threads", false, 2, 1, 64);
  out["time_kernels"] = fields.integer("time_kernels", false, 1, 0, 1);
  fields.only({"samples", "k", "limit_ops", "max_new_tokens", "temperature", "top_p", "seed", "max_check_elements",
               "check_trials", "check_threads", "time_kernels"});
  return out;
}

HttpResponse create_evaluation(ApiContext& ctx, HttpRequest& req) {
  return with_post(ctx, req, Scope::submit, [&](pqxx::connection& conn, const Principal& principal, const json& body) {
    FieldReader fields(body);
    fields.only({"model", "suite", "target", "priority", "settings"});
    std::string model = fields.string("model", true, "", 120);
    std::string suite = fields.string("suite", true, "", 100);
    std::string target = fields.choice("target", false, "opencl", {"opencl", "cuda", "triton"});
    int64_t priority = fields.integer("priority", false, 4, 0, 9);
    std::optional<db::ModelRecord> found;
    if (fields.ok()) {
      auto at = model.find('@');
      std::string digits = at == std::string::npos ? "" : model.substr(at + 1);
      bool numeric = digits.empty() ||
                     (digits.size() <= 6 && digits.find_first_not_of("0123456789") == std::string::npos);
      if (!numeric) {
        fields.fail("model", "must be a name or name@version");
      } else {
        found = db::model_find(conn, model.substr(0, at), digits.empty() ? 0 : std::stoi(digits));
        if (!found) fields.fail("model", "no model '" + model + "'");
      }
    }
    json settings = json::object();
    if (const json* given = fields.object("settings", false); fields.ok()) {
      json in = given ? *given : json::object();
      FieldReader setting_fields(in, "settings.");
      settings = evaluation_settings(setting_fields);
      fields.merge(setting_fields);
    }
    if (!fields.ok()) return fields.response();
    json args = {{"model", found->name + "@" + std::to_string(found->version)},
                 {"model_id", found->id},
                 {"suite", suite},
                 {"target", target},
                 {"settings", settings}};
    db::JobInsert insert;
    insert.kind = "evaluate";
    insert.priority = static_cast<int>(priority);
    insert.args_json = args.dump();
    return enqueue_job(conn, req, principal, insert, "/v1/evaluations", render_evaluation);
  });
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
