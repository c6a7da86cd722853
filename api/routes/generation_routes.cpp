// Generations: POST /v1/generations (op id or inline op, target, model, samples,
// time budget; fields, defaults and ranges from spec/job_spec.h) -> 202 with the job;
// GET list / one (status, progress, best kernel with speedup and source, timestamps,
// error); /candidates; /cancel. Tested over HTTP in tests/server/api_resources_test.cpp.
#include "api/routes/routes.h"

#include "api/candidate_view.h"
#include "api/handler_util.h"
#include "api/job_view.h"
#include "api/op_submit.h"
#include "db/models.h"
#include "db/ops.h"
#include "db/workers.h"
#include "spec/job_spec.h"

namespace kforge::api {
namespace {

const std::vector<std::string> kGenerateKinds = {"generate"};

json render_generation(pqxx::connection& conn, const db::Job& job) {
  json out = job_common_json(job, "generation");
  json args = parse_stored(job.args_json);
  for (const char* key : {"op_id", "target", "device", "model", "model_id", "samples", "time_budget_s", "seed"}) {
    out[key] = args.is_object() && args.contains(key) ? args[key] : json(nullptr);
  }
  // A waiting job that no live worker can run says so, rather than waiting silently.
  if ((job.state == db::JobState::available || job.state == db::JobState::retryable) && !job.required_tags.empty()) {
    pqxx::read_transaction txn(conn);
    if (db::worker_capable_count(txn, job.required_tags) == 0) {
      std::string needs;
      for (const auto& tag : job.required_tags) needs += (needs.empty() ? "" : ", ") + tag;
      out["waiting_for"] = "no live worker can run this job (it needs " + needs +
                           "); it stays queued until such a worker registers";
    }
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

HttpResponse create_generation(ApiContext& ctx, HttpRequest& req) {
  return with_post(ctx, req, Scope::submit, [&](pqxx::connection& conn, const Principal& principal, const json& body) {
    auto read = spec::read_generate(body, spec::Source::request);
    if (!read.ok()) return field_problem(read.errors);
    const spec::GenerateArgs& request = read.args;
    std::optional<db::OpRecord> op;
    if (request.op.is_object()) {
      OpSubmit submitted = submit_op(ctx, conn, principal, request.op, "op.");
      if (submitted.error) return *submitted.error;
      op = submitted.op;
    } else {
      op = db::op_get(conn, request.op_id);
      if (!op) {
        return problem(ErrorKind::unprocessable, "no op " + std::to_string(request.op_id), {{"op_id", "no such op"}});
      }
    }
    std::string model_name;
    int model_version = 0;
    spec::parse_model_ref(request.model, &model_name, &model_version);  // the reader checked its form
    auto model_row = db::model_find(conn, model_name, model_version);
    if (model_version > 0 && !model_row) {
      return problem(ErrorKind::unprocessable, "no model " + request.model, {{"model", "no such model version"}});
    }
    json args = read.stored;  // every field with its default, as the worker reads it back
    args["op_id"] = op->id;
    args["model_id"] = model_row ? json(model_row->id) : json(nullptr);
    db::JobInsert insert;
    insert.kind = "generate";
    insert.priority = request.priority;
    insert.args_json = args.dump();
    insert.required_tags = spec::required_capabilities(request.target, spec::resolved_device(request));
    return enqueue_job(conn, req, principal, insert, "/v1/generations", render_generation);
  }, job_replay("/v1/generations", render_generation));
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
    return candidate_page(req, [&](int64_t after, int limit) {
      return db::candidate_list_for_job(conn, job->id, after, limit);
    });
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
