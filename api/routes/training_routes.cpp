// Training jobs: POST /v1/training-jobs (method sft | grpo | rft, base model, dataset or
// suite, hyperparameters with every default echoed back; fields, defaults and ranges
// from spec/job_spec.h), GET list / one, /cancel, /metrics (per-step series), /events.
// Job kinds train_sft, train_grpo, train_rft. Tested over HTTP in tests/server/api_resources_test.cpp.
#include "api/routes/routes.h"

#include "api/handler_util.h"
#include "api/job_view.h"
#include "db/models.h"
#include "spec/job_spec.h"

namespace kforge::api {
namespace {

const std::vector<std::string> kTrainKinds = {"train_sft", "train_grpo", "train_rft"};

json render_training(pqxx::connection&, const db::Job& job) {
  json out = job_common_json(job, "training_job");
  json args = parse_stored(job.args_json);
  for (const char* key : {"method", "base_model", "base_model_id", "dataset", "suite", "hyperparameters",
                          "output_model"}) {
    out[key] = args.is_object() && args.contains(key) ? args[key] : json(nullptr);
  }
  json result = parse_stored(job.result_json);
  out["result"] = result;
  out["model_id"] = result.is_object() && result.contains("model_id") ? result["model_id"] : json(nullptr);
  return out;
}

// The training reader for the body's method (sft when absent or unknown: its reader
// then names `method`), the stored args and the base model's name.
template <typename Args>
HttpResponse enqueue_training(pqxx::connection& conn, const HttpRequest& req, const Principal& principal,
                              spec::ReadResult<Args> read) {
  if (!read.ok()) return field_problem(read.errors);
  const Args& request = read.args;
  std::optional<db::ModelRecord> base;
  if (!request.base_model.empty()) {
    std::string name;
    int version = 0;
    spec::parse_model_ref(request.base_model, &name, &version);  // the reader checked its form
    base = db::model_find(conn, name, version);
    if (!base) return field_problem({{"base_model", "no model '" + request.base_model + "'"}});
  }
  json args = read.stored;  // every hyperparameter with its default, as the worker reads it back
  args["base_model"] = base ? json(base->name + "@" + std::to_string(base->version)) : json(nullptr);
  args["base_model_id"] = base ? json(base->id) : json(nullptr);
  if (request.dataset.empty()) args["dataset"] = nullptr;
  if (request.suite.empty()) args["suite"] = nullptr;
  db::JobInsert insert;
  insert.kind = "train_" + (request.method.empty() ? std::string("sft") : request.method);
  insert.priority = request.priority;
  // A run whose worker died is rescued and resumes from its newest checkpoint; the
  // runner fails bad payloads without retry, so only real crashes use these attempts.
  insert.max_attempts = 3;
  insert.args_json = args.dump();
  return enqueue_job(conn, req, principal, insert, "/v1/training-jobs", render_training);
}

HttpResponse create_training(ApiContext& ctx, HttpRequest& req) {
  return with_post(ctx, req, Scope::submit, [&](pqxx::connection& conn, const Principal& principal, const json& body) {
    auto method = body.find("method");
    if (method != body.end() && *method == "grpo") {
      return enqueue_training(conn, req, principal, spec::read_grpo(body, spec::Source::request));
    }
    if (method != body.end() && *method == "rft") {
      return enqueue_training(conn, req, principal, spec::read_rft(body, spec::Source::request));
    }
    return enqueue_training(conn, req, principal, spec::read_sft(body, spec::Source::request));
  }, job_replay("/v1/training-jobs", render_training));
}

HttpResponse training_metrics(ApiContext& ctx, HttpRequest& req) {
  return with_db(ctx, req, Scope::none, [&](pqxx::connection& conn, const Principal&) {
    auto job = job_of_kind(conn, req.path_params["id"], kTrainKinds);
    if (!job) return problem(ErrorKind::not_found, "no training job " + req.path_params["id"]);
    PageRequest page;
    if (auto error = parse_page(req, &page)) return *error;
    int64_t after = -1;  // steps start at 0
    if (!page.after.empty()) {
      if (page.after.size() > 9 || page.after.find_first_not_of("0123456789") != std::string::npos) {
        return problem(ErrorKind::bad_request, "after: must be a step number", {{"after", "must be a step number"}});
      }
      after = std::stoll(page.after);
    }
    auto rows = db::training_metric_list(conn, job->id, static_cast<int>(after), page.limit + 1);
    json items = json::array();
    std::optional<std::string> next;
    for (size_t row_idx = 0; row_idx < rows.size(); ++row_idx) {
      if (static_cast<int>(row_idx) == page.limit) {
        next = std::to_string(rows[row_idx - 1].step);
        break;
      }
      items.push_back({{"step", rows[row_idx].step},
                       {"metrics", parse_stored(rows[row_idx].metrics_json)},
                       {"created_at", rows[row_idx].created_at}});
    }
    return page_response(std::move(items), next);
  });
}

HttpResponse training_events(ApiContext& ctx, HttpRequest& req) {
  return with_db(ctx, req, Scope::none, [&](pqxx::connection& conn, const Principal&) {
    auto job = job_of_kind(conn, req.path_params["id"], kTrainKinds);
    if (!job) return problem(ErrorKind::not_found, "no training job " + req.path_params["id"]);
    PageRequest page;
    if (auto error = parse_page(req, &page)) return *error;
    int64_t after = 0;
    if (!parse_id_cursor(page.after, &after)) {
      return problem(ErrorKind::bad_request, "after: not an event cursor", {{"after", "malformed cursor"}});
    }
    auto rows = db::training_event_list(conn, job->id, after, page.limit + 1);
    json items = json::array();
    std::optional<std::string> next;
    for (size_t row_idx = 0; row_idx < rows.size(); ++row_idx) {
      if (static_cast<int>(row_idx) == page.limit) {
        next = std::to_string(rows[row_idx - 1].id);
        break;
      }
      const auto& event = rows[row_idx];
      items.push_back({{"id", event.id},
                       {"level", event.level},
                       {"message", event.message},
                       {"data", parse_stored(event.data_json)},
                       {"created_at", event.created_at}});
    }
    return page_response(std::move(items), next);
  });
}

}  // namespace

void add_training_routes(Router& router, ApiContext& ctx) {
  router.add("POST", "/v1/training-jobs", [&ctx](HttpRequest& req) { return create_training(ctx, req); });
  router.add("GET", "/v1/training-jobs", [&ctx](HttpRequest& req) {
    return with_db(ctx, req, Scope::none, [&](pqxx::connection& conn, const Principal&) {
      return list_jobs(conn, req, kTrainKinds, render_training);
    });
  });
  router.add("GET", "/v1/training-jobs/{id}", [&ctx](HttpRequest& req) {
    return with_db(ctx, req, Scope::none, [&](pqxx::connection& conn, const Principal&) {
      auto job = job_of_kind(conn, req.path_params["id"], kTrainKinds);
      if (!job) return problem(ErrorKind::not_found, "no training job " + req.path_params["id"]);
      return json_response(200, render_training(conn, *job));
    });
  });
  router.add("POST", "/v1/training-jobs/{id}/cancel", [&ctx](HttpRequest& req) {
    return with_db(ctx, req, Scope::submit, [&](pqxx::connection& conn, const Principal&) {
      return cancel_job(conn, req, kTrainKinds, "training job", render_training);
    });
  });
  router.add("GET", "/v1/training-jobs/{id}/metrics", [&ctx](HttpRequest& req) { return training_metrics(ctx, req); });
  router.add("GET", "/v1/training-jobs/{id}/events", [&ctx](HttpRequest& req) { return training_events(ctx, req); });
}

}  // namespace kforge::api
