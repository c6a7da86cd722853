// The `train_rft` job runner (training_jobs.h): expert iteration from a parent model
// version on the suite's train split. Each round samples, keeps what the harness verifies
// and fine-tunes on every kernel kept so far (worker/train/rft.h); one training_metrics row
// and one checkpoint (policy + the kept pool) per round, registered as a model version;
// a rescued job resumes after its newest round. Test: ctest -R jobs_training_test.
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "db/connection.h"
#include "db/models.h"
#include "worker/jobs/model_store.h"
#include "worker/jobs/training_support.h"
#include "worker/train/checkpoint.h"
#include "worker/train/model_policy.h"
#include "worker/train/rft.h"
#include "worker/train/train_config.h"

namespace kforge::jobs {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

json round_summary(const train::RftRoundMetrics& m) {
  return {{"correct_rate", m.correct_rate}, {"rule_violation_rate", m.rule_violation_rate},
          {"tasks_solved", m.tasks_solved}, {"pool_size", m.pool_size}, {"loss", m.sft_loss}};
}

// The kept pool as JSONL, stored in each round's checkpoint so a resume keeps it.
std::string pool_jsonl(const std::vector<train::SftExample>& pool) {
  std::ostringstream out;
  for (const auto& example : pool) out << json{{"prompt", example.prompt}, {"completion", example.completion}}.dump() << "\n";
  return out.str();
}

worker::JobOutcome run(worker::JobContext& ctx, const TrainingJobOptions& options) {
  RftJobArgs args = parse_rft_job_args(ctx.args_json());  // invalid_argument: no retry (caller)
  const int64_t job_id = ctx.job().id;
  auto conn = db::connect(options.database_url);
  JobEvents events(*conn, job_id);

  SamplingRun start = prepare_sampling_run(*conn, options, job_id, args.base_model_id, args.suite, args.check.limit_ops);
  const db::ModelRecord* base = &start.base;
  const std::vector<train::Task>& tasks = start.tasks;
  const std::string& out_dir = start.out_dir;
  const std::string& resume_dir = start.resume_dir;
  const int resumed = start.resumed;

  policy::LoadOptions load{options.device, "float32"};
  std::unique_ptr<train::ModelPolicy> policy;
  try {
    policy = train::ModelPolicy::from_dir(resume_dir.empty() ? start.base_dir : resume_dir, load);
  } catch (const std::exception& e) {
    throw std::invalid_argument("base_model: cannot load " + base->name + "@" + std::to_string(base->version) + ": " +
                                e.what());
  }
  train::HarnessChecker checker(train::check_options(args.check, 0.3), args.check.max_check_elements,
                                train::HarnessChecker::idle_for(args.check.threads));
  std::unique_ptr<train::RftTrainer> trainer;
  try {
    trainer = std::make_unique<train::RftTrainer>(*policy, checker, train::rft_config(args, train::PromptStyle::kforge_tiny));
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("hyperparameters: ") + e.what());
  }

  CheckpointRegistry registry(*conn, events, options, job_id, args.output_model, args.base_model_id);
  if (resumed > 0) {
    trainer->restore(resumed, train::read_sft_jsonl((fs::path(resume_dir) / "kept.jsonl").string()));
    events.info("resumed from checkpoint " + std::to_string(resumed),
                json{{"attempt", ctx.attempt()}, {"round", resumed}, {"checkpoint", resume_dir}}.dump());
    registry.add(resume_dir, resumed, json{{"method", "rft"}, {"step", resumed}}.dump());
  } else {
    events.info("started", json{{"attempt", ctx.attempt()}, {"tasks", tasks.size()}, {"rounds", args.rounds},
                                {"base_model_id", args.base_model_id}}.dump());
  }

  train::RftRoundMetrics last;
  for (int round = resumed + 1; round <= args.rounds; ++round) {
    if (ctx.cancelled()) {
      events.warn("stopped before round " + std::to_string(round) + "; the newest checkpoint is kept for a resume");
      return worker::JobOutcome::fail("stopped before round " + std::to_string(round));
    }
    last = trainer->round(tasks);
    db::training_metric_insert(*conn, job_id, round, last.to_json());
    json progress = round_summary(last);
    progress["phase"] = "training";
    progress["step"] = round;
    progress["total_steps"] = args.rounds;
    progress["resumed_from"] = resumed;
    ctx.report_progress(progress.dump());
    json metrics = round_summary(last);
    metrics["method"] = "rft";
    metrics["step"] = round;
    std::string checkpoint = train::write_checkpoint(out_dir, round, *policy, nullptr, json{{"method", "rft"}},
                                                     /*keep=*/2, {{"kept.jsonl", pool_jsonl(trainer->pool())}});
    registry.add(checkpoint, round, metrics.dump());
  }

  json out = finish_training(registry, events, out_dir, "rft", "rounds", args.rounds, resumed, args.base_model_id);
  out["kept"] = trainer->pool().size();
  if (resumed < args.rounds) out["last_round"] = round_summary(last);
  return worker::JobOutcome::complete(out.dump());
}

}  // namespace

worker::JobOutcome run_train_rft(worker::JobContext& ctx, const TrainingJobOptions& options) {
  return without_retry_on_bad_payload([&] { return run(ctx, options); });
}

}  // namespace kforge::jobs
