// The database job runners for training and evaluation: `train_sft`, `train_grpo`,
// `train_rft` and `evaluate` (worker/train does the work; these read the job payload, report
// progress, honour cancellation between steps, write training_metrics, training_events,
// models and evaluations rows). Docs: docs/jobs.md. Tests: ctest -R 'jobs_(args|training)_test'.
#pragma once

#include <string>

#include "worker/jobs/model_files.h"
#include "worker/worker.h"

namespace kforge::jobs {

//! Where the runners keep files and find the suite.
struct TrainingJobOptions {
  std::string database_url;  //!< each run opens its own connection
  std::string data_dir;      //!< checkpoints under training/job-<id>/, model versions under models/job-<id>/
  std::string suite_dir;     //!< the built-in op suite (suite "builtin")
  std::string device = "cpu";  //!< where the policy runs: cpu, cuda, cuda:1
  ModelFetchOptions model_files;  //!< base / evaluated versions not on this host (model_files.h)

  //! From the environment: KFORGE_DATA_DIR (./var), KFORGE_SUITE_DIR (else ./suite, else
  //! the source tree's suite/ next to build/bin), KFORGE_TRAIN_DEVICE (cpu), and
  //! ModelFetchOptions::from_env.
  static TrainingJobOptions from_env(const std::string& database_url);
};

//! SFT on a JSONL dataset or on teacher kernels of the suite's train split; per-step
//! metrics, checkpoints registered as model versions, resumes from the newest one.
worker::JobOutcome run_train_sft(worker::JobContext& ctx, const TrainingJobOptions& options);
//! GRPO from a parent model version with the harness as reward; per-step metrics,
//! checkpoints registered as model versions, resumes from the newest one.
worker::JobOutcome run_train_grpo(worker::JobContext& ctx, const TrainingJobOptions& options);
//! Expert iteration from a parent model version: per round, samples verified by the
//! harness are kept and fine-tuned on; one metrics row and model version per round, resumes
//! after the newest round.
worker::JobOutcome run_train_rft(worker::JobContext& ctx, const TrainingJobOptions& options);
//! Samples and checks a model version on a suite split; stores an evaluations row
//! (summary metrics + per-op rows) in the completion's transaction.
worker::JobOutcome run_evaluate(worker::JobContext& ctx, const TrainingJobOptions& options);

//! Registers train_sft, train_grpo, train_rft and evaluate.
void register_training_jobs(worker::HandlerRegistry& registry, const TrainingJobOptions& options);

}  // namespace kforge::jobs
