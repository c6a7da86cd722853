// Training jobs: POST /v1/training-jobs (method sft | grpo, base model, dataset
// or suite, hyperparameters with every default echoed back), GET list / one,
// /cancel, /metrics (per-step series), /events. Job kinds train_sft, train_grpo.
// Tested over HTTP in tests/server/api_resources_test.cpp.
#include "api/routes/routes.h"

#include "api/handler_util.h"
#include "api/job_view.h"
#include "db/models.h"

namespace kforge::api {
namespace {

const std::vector<std::string> kTrainKinds = {"train_sft", "train_grpo"};

// One hyperparameter: default and inclusive range; integers are checked as such.
struct HyperSpec {
  const char* name;
  double fallback;
  double min;
  double max;
  bool integer;
};

// Defaults follow docs/api.md (SFT: loss on completion tokens; GRPO: clipped
// ratio with eps_low/eps_high, optional k3 KL, reward w * min(speedup, cap)).
const std::vector<HyperSpec>& hyper_specs(const std::string& method) {
  static const std::vector<HyperSpec> sft = {
      {"epochs", 3, 1, 1000, true},          {"learning_rate", 3e-4, 1e-8, 1, false},
      {"batch_size", 16, 1, 4096, true},     {"max_seq_len", 2048, 16, 131072, true},
      {"warmup_steps", 10, 0, 1e6, true},    {"weight_decay", 0.0, 0, 1, false},
      {"grad_clip", 1.0, 0, 1000, false},    {"seed", 0, 0, 2147483647, true},
      // Run length and bookkeeping (max_steps 0 = from epochs; checkpoint_every 0 = only at the end).
      {"max_steps", 0, 0, 1e6, true},        {"micro_batch", 4, 1, 4096, true},
      {"eval_every", 25, 0, 1e6, true},      {"checkpoint_every", 50, 0, 1e6, true},
      {"vocab_size", 4096, 260, 262144, true},
      // Building the dataset from a suite's train split with the teacher compiler (limit_ops 0 = all).
      {"limit_ops", 0, 0, 100000, true},     {"variants_per_op", 4, 1, 64, true},
      {"max_check_elements", 65536, 0, 1e9, true}, {"check_trials", 2, 1, 20, true}};
  static const std::vector<HyperSpec> grpo = {
      {"steps", 200, 1, 1e6, true},               {"learning_rate", 1e-5, 1e-9, 1, false},
      {"prompts_per_step", 4, 1, 1024, true},     {"group_size", 8, 2, 256, true},
      {"eps_low", 0.2, 0, 1, false},              {"eps_high", 0.28, 0, 1, false},
      {"kl_coef", 0.0, 0, 10, false},             {"temperature", 1.0, 0.01, 5, false},
      {"top_p", 1.0, 0.01, 1, false},             {"max_new_tokens", 1024, 1, 65536, true},
      {"speed_weight", 0.5, 0, 10, false},        {"speed_cap", 3.0, 1, 1000, false},
      {"grad_clip", 1.0, 0, 1000, false},         {"seed", 0, 0, 2147483647, true},
      {"warmup_steps", 0, 0, 1e6, true},          {"micro_batch", 4, 1, 4096, true},
      {"checkpoint_every", 50, 0, 1e6, true},     {"limit_ops", 0, 0, 100000, true},
      {"max_check_elements", 65536, 0, 1e9, true}, {"check_trials", 2, 1, 20, true},
      {"check_threads", 2, 1, 64, true},          {"time_kernels", 1, 0, 1, true}};
  return method == "grpo" ? grpo : sft;
}

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

HttpResponse create_training(ApiContext& ctx, HttpRequest& req) {
  return with_post(ctx, req, Scope::submit, [&](pqxx::connection& conn, const Principal& principal, const json& body) {
    FieldReader fields(body);
    fields.only({"method", "base_model", "dataset", "suite", "hyperparameters", "output_model", "priority"});
    std::string method = fields.choice("method", true, "sft", {"sft", "grpo"});
    std::string base_model = fields.string("base_model", false, "", 120);
    std::string dataset = fields.string("dataset", false, "", 1024);
    std::string suite = fields.string("suite", false, "", 100);
    std::string output_model = fields.string("output_model", false, "kforge-tiny", 100);
    int64_t priority = fields.integer("priority", false, 5, 0, 9);
    const json* hyper_in = fields.object("hyperparameters", false);
    if (dataset.empty() == suite.empty() && fields.ok()) {
      fields.fail("suite", "give exactly one of dataset or suite");
    }
    if (method == "grpo" && base_model.empty() && fields.ok()) {
      fields.fail("base_model", "GRPO starts from a trained model: give base_model (for example kforge-tiny)");
    }
    json hyper = json::object();
    if (fields.ok()) {
      json given = hyper_in ? *hyper_in : json::object();
      FieldReader hyper_fields(given, "hyperparameters.");
      std::vector<std::string> known;
      for (const auto& spec : hyper_specs(method)) {
        known.push_back(spec.name);
        if (spec.integer) {
          hyper[spec.name] = hyper_fields.integer(spec.name, false, static_cast<int64_t>(spec.fallback),
                                                  static_cast<int64_t>(spec.min), static_cast<int64_t>(spec.max));
        } else {
          hyper[spec.name] = hyper_fields.number(spec.name, false, spec.fallback, spec.min, spec.max);
        }
      }
      hyper_fields.only(known);
      if (method == "grpo" && hyper["eps_high"].get<double>() < hyper["eps_low"].get<double>()) {
        hyper_fields.fail("eps_high", "must be at least eps_low");
      }
      fields.merge(hyper_fields);
    }
    std::optional<db::ModelRecord> base;
    if (fields.ok() && !base_model.empty()) {
      auto at = base_model.find('@');
      std::string name = base_model.substr(0, at);
      int version = 0;
      if (at != std::string::npos) {
        std::string digits = base_model.substr(at + 1);
        bool numeric = !digits.empty() && digits.size() <= 6 && digits.find_first_not_of("0123456789") == std::string::npos;
        version = numeric ? std::stoi(digits) : -1;
      }
      if (version < 0) fields.fail("base_model", "must be a name or name@version");
      else if (!(base = db::model_find(conn, name, version))) fields.fail("base_model", "no model '" + base_model + "'");
    }
    if (!fields.ok()) return fields.response();

    json args = {{"method", method}, {"hyperparameters", hyper}, {"output_model", output_model}};
    args["base_model"] = base ? json(base->name + "@" + std::to_string(base->version)) : json(nullptr);
    args["base_model_id"] = base ? json(base->id) : json(nullptr);
    args["dataset"] = dataset.empty() ? json(nullptr) : json(dataset);
    args["suite"] = suite.empty() ? json(nullptr) : json(suite);
    db::JobInsert insert;
    insert.kind = method == "sft" ? "train_sft" : "train_grpo";
    insert.priority = static_cast<int>(priority);
    // A run whose worker died is rescued and resumes from its newest checkpoint; the
    // runner fails bad payloads without retry, so only real crashes use these attempts.
    insert.max_attempts = 3;
    insert.args_json = args.dump();
    return enqueue_job(conn, req, principal, insert, "/v1/training-jobs", render_training);
  });
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
