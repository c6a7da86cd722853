// Pieces the training runners share (internal to worker/jobs): suite loading
// with the job's limit, per-job directories, training events, checkpoint registration.
// Exercised by tests/worker/jobs/training_jobs_test.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include "db/models.h"
#include "worker/jobs/job_args.h"
#include "worker/jobs/training_jobs.h"
#include "worker/train/suite_tasks.h"

namespace kforge::jobs {

//! The split's ops (first `limit` when > 0). Throws std::invalid_argument naming
//! `suite` when the directory is unreadable or the split is empty.
std::vector<train::SuiteOp> load_suite_ops(const SuiteRef& suite, int limit);

//! <data_dir>/training/job-<id>: checkpoints and the cached dataset of one job.
std::string job_work_dir(const TrainingJobOptions& options, int64_t job_id);
//! <data_dir>/models/job-<id>: the model versions one job registered.
std::string job_models_dir(const TrainingJobOptions& options, int64_t job_id);

//! Appends to training_events for one job (shown by GET /v1/training-jobs/{id}/events).
class JobEvents {
 public:
  JobEvents(pqxx::connection& conn, int64_t job_id) : conn_(conn), job_id_(job_id) {}
  //! An info event with optional JSON data.
  void info(const std::string& message, const std::string& data_json = "{}");
  //! A warning event with optional JSON data.
  void warn(const std::string& message, const std::string& data_json = "{}");

 private:
  pqxx::connection& conn_;
  int64_t job_id_;
};

//! Registers one training job's checkpoints as versions of its output model (copies
//! under job_models_dir/step-<n>, see model_store.h), records an event for each, and
//! remembers the ids in order (a re-registered checkpoint is listed once).
class CheckpointRegistry {
 public:
  //! Versions are named `model_name`, with parent `parent_id`; creates the models dir.
  CheckpointRegistry(pqxx::connection& conn, JobEvents& events, const TrainingJobOptions& options, int64_t job_id,
                     std::string model_name, int64_t parent_id);
  //! Registers the checkpoint written at `step` with its metrics (a JSON object text).
  db::ModelRecord add(const std::string& checkpoint_dir, int step, const std::string& metrics_json);
  //! Ids of every version registered so far, oldest first.
  const std::vector<int64_t>& ids() const { return ids_; }

 private:
  pqxx::connection& conn_;
  JobEvents& events_;
  int64_t job_id_;
  std::string model_name_;
  int64_t parent_id_;
  std::string models_dir_;
  std::vector<int64_t> ids_;
};

//! Where a GRPO or expert-iteration run starts: the base version and its weights, the
//! train split's tasks, the checkpoints directory and the newest checkpoint in it.
struct SamplingRun {
  db::ModelRecord base;            //!< the base model version
  std::string base_dir;            //!< its weights directory
  std::vector<train::Task> tasks;  //!< the suite's train split (first limit_ops), kforge-tiny prompts
  std::string out_dir;             //!< <work>/checkpoints (created)
  std::string resume_dir;          //!< newest checkpoint there ("" on a first attempt)
  int resumed = 0;                 //!< its step or round (0 when none)
};

//! Reads all of SamplingRun; std::invalid_argument (no retry) naming base_model or suite.
SamplingRun prepare_sampling_run(pqxx::connection& conn, const TrainingJobOptions& options, int64_t job_id,
                                 int64_t base_model_id, const std::string& suite, int limit_ops);

//! The end of a GRPO or expert-iteration run: the newest checkpoint under `out_dir`
//! registered as the job's model (metrics {method}), a "finished" event, and the result
//! fields both have: model_id, model, model_path, `count_key` (steps or rounds) = count,
//! resumed_from, base_model_id, checkpoint_model_ids. Throws std::runtime_error when no
//! checkpoint was written.
nlohmann::json finish_training(CheckpointRegistry& registry, JobEvents& events, const std::string& out_dir,
                               const std::string& method, const std::string& count_key, int count, int resumed,
                               int64_t base_model_id);

//! Runs a runner, turning std::invalid_argument (a bad payload) into a failure without retry.
template <typename Run>
worker::JobOutcome without_retry_on_bad_payload(Run&& run) {
  try {
    return run();
  } catch (const std::invalid_argument& e) {
    return worker::JobOutcome::fail(e.what(), /*retryable=*/false);
  }
}

}  // namespace kforge::jobs
