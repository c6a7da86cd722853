// Pieces the three training runners share (internal to worker/jobs): suite loading
// with the job's limit, harness settings, per-job directories, training events.
// Exercised by tests/worker/jobs/training_jobs_test.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "worker/harness/checker.h"
#include "worker/jobs/job_args.h"
#include "worker/jobs/training_jobs.h"
#include "worker/train/suite_tasks.h"

namespace kforge::jobs {

//! The split's ops (first `limit` when > 0). Throws std::invalid_argument naming
//! `suite` when the directory is unreadable or the split is empty.
std::vector<train::SuiteOp> load_suite_ops(const SuiteRef& suite, int limit);

//! Harness options from a job's settings.
harness::CheckOptions job_check_options(const CheckSettings& settings, double time_budget_s);

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

}  // namespace kforge::jobs
