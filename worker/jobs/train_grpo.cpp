// The `train_grpo` job runner (training_jobs.h): GRPO from a parent model version on
// the suite's train split, every sample checked by the harness (HarnessChecker), per-step
// GrpoStepMetrics in training_metrics, checkpoints (policy + optimizer + step) registered
// as model versions, and resume from the newest one. Test: ctest -R jobs_training_test.
#include <filesystem>
#include <optional>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "db/connection.h"
#include "db/models.h"
#include "worker/jobs/model_files.h"
#include "worker/jobs/training_support.h"
#include "worker/train/checkpoint.h"
#include "worker/train/curriculum.h"
#include "worker/train/grpo_trainer.h"
#include "worker/train/model_policy.h"
#include "worker/train/train_config.h"

namespace kforge::jobs {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

json step_summary(const train::GrpoStepMetrics& m) {
  return {{"reward_mean", m.reward_mean},
          {"correct_rate", m.correct_rate},
          {"rule_violation_rate", m.rule_violation_rate},
          {"hacking_rate", m.hacking_rate},
          {"suspicious_rate", m.suspicious_rate}};
}

worker::JobOutcome run(worker::JobContext& ctx, const TrainingJobOptions& options) {
  GrpoJobArgs args = parse_grpo_job_args(ctx.args_json());  // invalid_argument: no retry (caller)
  const int64_t job_id = ctx.job().id;
  auto conn = db::connect(options.database_url);
  JobEvents events(*conn, job_id);

  SamplingRun start = prepare_sampling_run(*conn, options, job_id, args.base_model_id, args.suite, args.check.limit_ops);
  const db::ModelRecord* base = &start.base;
  const std::string& base_dir = start.base_dir;
  const std::vector<train::Task>& tasks = start.tasks;
  const std::string& out_dir = start.out_dir;
  const std::string& resume_dir = start.resume_dir;
  const int resumed = start.resumed;

  policy::LoadOptions load{options.device, "float32"};
  std::unique_ptr<train::ModelPolicy> policy, reference;
  try {
    if (resume_dir.empty()) policy = train::ModelPolicy::from_dir(base_dir, load);
    if (args.kl_coef > 0) reference = train::ModelPolicy::from_dir(base_dir, load, /*trainable=*/false);
  } catch (const std::exception& e) {
    throw std::invalid_argument("base_model: cannot load " + base->name + "@" + std::to_string(base->version) + ": " +
                                e.what());
  }
  if (!resume_dir.empty()) policy = train::ModelPolicy::from_dir(resume_dir, load);

  train::GrpoConfig config = train::grpo_config(args, train::PromptStyle::kforge_tiny);
  // The trainer mixes its own 1-based step count into the sampling seed; shifting the
  // base by the resumed steps gives step s the seeds of an uninterrupted run.
  config.seed = args.seed + 1000003ull * static_cast<uint64_t>(resumed);
  train::HarnessChecker checker(train::check_options(args.check, 0.3), args.check.max_check_elements,
                                train::HarnessChecker::idle_for(args.check.threads));
  std::unique_ptr<train::GrpoTrainer> trainer;
  try {
    trainer = std::make_unique<train::GrpoTrainer>(*policy, reference.get(), checker, config);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("hyperparameters: ") + e.what());
  }
  if (!resume_dir.empty()) trainer->optimizer().load((fs::path(resume_dir) / "optimizer.pt").string());

  CheckpointRegistry registry(*conn, events, options, job_id, args.output_model, args.base_model_id);
  auto register_checkpoint = [&](const std::string& checkpoint, int step, const json& metrics) {
    return registry.add(checkpoint, step, metrics.dump());
  };
  if (resumed > 0) {
    events.info("resumed from checkpoint " + std::to_string(resumed),
                json{{"attempt", ctx.attempt()}, {"step", resumed}, {"checkpoint", resume_dir}}.dump());
    register_checkpoint(resume_dir, resumed, json{{"method", "grpo"}, {"step", resumed}});
  } else {
    events.info("started", json{{"attempt", ctx.attempt()}, {"tasks", tasks.size()}, {"steps", args.steps},
                                {"base_model_id", args.base_model_id}}.dump());
  }

  // Tasks rotate through a seeded shuffle of the split, as kforge-train grpo does; step s
  // always gets the same batch, resumed or not. With a curriculum the rotation holds the
  // learnable tasks, re-measured every curriculum_every steps (a resume re-measures at once).
  train::TaskSchedule schedule(tasks, args.seed);
  std::optional<train::CurriculumStats> curriculum;

  train::GrpoStepMetrics last;
  for (int step = resumed + 1; step <= args.steps; ++step) {
    if (ctx.cancelled()) {
      events.warn("stopped before step " + std::to_string(step) + "; the newest checkpoint is kept for a resume");
      return worker::JobOutcome::fail("stopped before step " + std::to_string(step));
    }
    int every = args.curriculum_every;
    bool refresh_now = every > 0 && (step == resumed + 1 || (step - 1) % every == 0);
    if (auto refreshed = train::refresh_curriculum(schedule, *policy, checker, config.sampling, config.check_threads,
                                                   config.seed, refresh_now ? 1 : 0, args.curriculum_samples, step)) {
      curriculum = refreshed;
      events.info("curriculum: " + std::to_string(refreshed->learnable) + " of " + std::to_string(refreshed->measured) +
                      " tasks have 0 < pass@1 < 1" + (refreshed->fallback ? " (none: training on all)" : ""),
                  refreshed->to_json());
    }
    last = trainer->step(schedule.batch(step, args.prompts_per_step));
    last.step = step;
    if (curriculum) {
      last.curriculum_tasks = schedule.active();
      last.curriculum_mean_pass1 = curriculum->mean_pass1;
    }
    db::training_metric_insert(*conn, job_id, step, last.to_json());
    json progress = step_summary(last);
    progress["phase"] = "training";
    progress["step"] = step;
    progress["total_steps"] = args.steps;
    progress["resumed_from"] = resumed;
    ctx.report_progress(progress.dump());
    bool due = step == args.steps || (args.checkpoint_every > 0 && step % args.checkpoint_every == 0);
    if (due) {
      json metrics = step_summary(last);
      metrics["method"] = "grpo";
      metrics["step"] = step;
      std::string checkpoint =
          train::write_checkpoint(out_dir, step, *policy, trainer->optimizer(), json{{"method", "grpo"}}, /*keep=*/2);
      register_checkpoint(checkpoint, step, metrics);
    }
  }

  json out = finish_training(registry, events, out_dir, "grpo", "steps", args.steps, resumed, args.base_model_id);
  if (resumed < args.steps) out["last_step"] = step_summary(last);
  return worker::JobOutcome::complete(out.dump());
}

}  // namespace

worker::JobOutcome run_train_grpo(worker::JobContext& ctx, const TrainingJobOptions& options) {
  return without_retry_on_bad_payload([&] { return run(ctx, options); });
}

}  // namespace kforge::jobs
