// The `evaluate` job runner (training_jobs.h): a model version x suite split x target
// -> n samples per op checked by the harness -> pass@1/pass@k/best speedup per op and
// compile rate, fast_0/1/1.5/2, geomean overall, stored as one evaluations row in the
// completion's transaction (so the model leaderboard shows it exactly once).
// Ops are evaluated one at a time so progress and cancellation work between ops.
// Test: ctest -R jobs_training_test.
#include <filesystem>
#include <map>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "db/connection.h"
#include "db/models.h"
#include "db/sql.h"
#include "worker/harness/host_devices.h"
#include "worker/jobs/model_files.h"
#include "worker/jobs/training_support.h"
#include "worker/train/evaluate.h"
#include "worker/train/model_policy.h"
#include "worker/train/train_config.h"

namespace kforge::jobs {
namespace {

using json = nlohmann::json;

// The OpenCL device the harness checks on (its first device), for the evaluations row.
std::string check_device() {
  // Listed by a child: this process must not initialise OpenCL (its sandboxes would see only PoCL).
  auto host = harness::probe_host_devices();
  return host.opencl.empty() ? "" : host.opencl.front().name;
}

worker::JobOutcome run(worker::JobContext& ctx, const TrainingJobOptions& options) {
  EvaluateJobArgs args = parse_evaluate_job_args(ctx.args_json());  // invalid_argument: no retry (caller)
  if (args.target != "opencl") {
    throw std::invalid_argument("target: '" + args.target + "' is not supported by this worker (it runs opencl)");
  }
  auto conn = db::connect(options.database_url);
  auto model = db::model_get(*conn, args.model_id);
  if (!model) throw std::invalid_argument("model: model id " + std::to_string(args.model_id) + " does not exist");
  std::string model_dir = model_files_resolve(*model, options.model_files, "model").dir;
  SuiteRef suite = resolve_evaluation_suite(args.suite, options.suite_dir);
  auto ops = load_suite_ops(suite, args.check.limit_ops);
  std::vector<train::Task> tasks = suite_tasks(ops, train::PromptStyle::kforge_tiny);

  std::unique_ptr<train::ModelPolicy> policy;
  try {
    policy = train::ModelPolicy::from_dir(model_dir, {options.device, "float32"}, /*trainable=*/false);
  } catch (const std::exception& e) {
    throw std::invalid_argument("model: cannot load " + args.model + ": " + e.what());
  }
  // Verify every sample in parallel untimed, then time the correct ones one at a time
  // (EvalConfig::timing_checker), so no timed run shares the CPU with another check.
  harness::CheckOptions timed_options = train::check_options(args.check, 1.0);
  harness::CheckOptions verify_options = timed_options;
  verify_options.time = false;
  train::HarnessChecker checker(verify_options, args.check.max_check_elements,
                                train::HarnessChecker::idle_for(args.check.threads));
  train::HarnessChecker timing_checker(timed_options, args.check.max_check_elements, train::HarnessChecker::idle_for(1));
  train::EvalConfig config = train::eval_config(args, train::PromptStyle::kforge_tiny);
  if (args.check.time_kernels) config.timing_checker = &timing_checker;

  std::vector<train::OpSamples> all;
  std::map<std::string, int> outcomes;
  int correct = 0;
  for (size_t op_idx = 0; op_idx < tasks.size(); ++op_idx) {
    if (ctx.cancelled()) return worker::JobOutcome::fail("stopped after " + std::to_string(op_idx) + " ops");
    ctx.report_progress(json{{"phase", "evaluating"}, {"ops_done", op_idx}, {"ops_total", tasks.size()},
                             {"correct_samples", correct}, {"op", tasks[op_idx].id}}.dump());
    // evaluate_policy mixes the task index into the seed (seed + 7919 * index); one op
    // at a time with the base shifted the same way draws the same samples.
    config.seed = args.seed + 7919ull * op_idx;
    std::vector<train::OpSamples> raw;
    train::evaluate_policy(*policy, {tasks[op_idx]}, checker, config, &raw);
    for (const auto& sample : raw.front().samples) {
      ++outcomes[train::outcome_name(sample.outcome)];
      if (sample.outcome == train::Outcome::correct) ++correct;
    }
    all.push_back(std::move(raw.front()));
  }

  train::EvalSummary summary = train::summarize_eval(all, args.k);
  json metrics = json::parse(train::eval_summary_to_json(summary));
  json tasks_json = metrics["per_op"];
  metrics.erase("per_op");
  for (size_t op_idx = 0; op_idx < all.size() && op_idx < tasks_json.size(); ++op_idx) {
    json op_outcomes = json::object();
    std::string first_failure;
    for (const auto& sample : all[op_idx].samples) {
      std::string name = train::outcome_name(sample.outcome);
      op_outcomes[name] = op_outcomes.value(name, 0) + 1;
      if (first_failure.empty() && sample.outcome != train::Outcome::correct) first_failure = name + ": " + sample.message;
    }
    tasks_json[op_idx]["outcomes"] = op_outcomes;
    // Why the op's samples fail, for a person reading the table (harness one-liner, cut short).
    tasks_json[op_idx]["first_failure"] = first_failure.empty() ? json(nullptr) : json(first_failure.substr(0, 300));
  }
  metrics["outcomes"] = outcomes;
  metrics["samples_per_op"] = args.samples;
  metrics["split"] = suite.split.empty() ? "all" : suite.split;
  metrics["max_check_elements"] = args.check.max_check_elements;
  metrics["timed"] = args.check.time_kernels;

  std::string device = check_device();
  int64_t job_id = ctx.job().id;
  std::string metrics_text = metrics.dump(), tasks_text = tasks_json.dump();
  std::string suite_name = args.suite, target = args.target;
  int64_t model_id = args.model_id;
  // Written with the completion, under the lease: a lost lease writes nothing.
  ctx.on_complete([=](pqxx::transaction_base& txn) {
    txn.exec_params(db::sql("evaluation_insert"), job_id, model_id, suite_name, target, device, metrics_text,
                    tasks_text);
  });
  json out = metrics;
  out["model"] = args.model;
  out["model_id"] = args.model_id;
  out["suite"] = args.suite;
  out["device"] = device;
  return worker::JobOutcome::complete(out.dump());
}

}  // namespace

worker::JobOutcome run_evaluate(worker::JobContext& ctx, const TrainingJobOptions& options) {
  try {
    return run(ctx, options);
  } catch (const std::invalid_argument& e) {
    return worker::JobOutcome::fail(e.what(), /*retryable=*/false);
  }
}

}  // namespace kforge::jobs
