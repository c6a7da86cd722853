// Registration and the shared helpers of the training runners (training_jobs.h,
// training_support.h). The runners themselves: train_sft.cpp, train_grpo.cpp, evaluate.cpp.
// Tests: ctest -R jobs_training_test.
#include "worker/jobs/training_jobs.h"

#include <unistd.h>

#include <filesystem>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/config.h"
#include "db/models.h"
#include "worker/jobs/model_files.h"
#include "worker/jobs/model_store.h"
#include "worker/jobs/training_support.h"
#include "worker/train/checkpoint.h"

namespace kforge::jobs {
namespace {

namespace fs = std::filesystem;

// The suite directory: env, then ./suite, then <repo>/suite for a binary in <repo>/build/bin.
std::string find_suite_dir() {
  std::string from_env = env_or("KFORGE_SUITE_DIR", "");
  if (!from_env.empty()) return fs::absolute(from_env).string();
  std::error_code ec;
  if (fs::is_directory("suite/level1", ec)) return fs::absolute("suite").string();
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path candidate = exe.parent_path().parent_path().parent_path() / "suite";
    if (fs::is_directory(candidate / "level1", ec)) return candidate.string();
  }
  return fs::absolute("suite").string();  // absent: jobs that need it fail naming `suite`
}

}  // namespace

TrainingJobOptions TrainingJobOptions::from_env(const std::string& database_url) {
  TrainingJobOptions options;
  options.database_url = database_url;
  options.data_dir = fs::absolute(kforge::data_dir()).string();
  options.suite_dir = find_suite_dir();
  options.device = env_or("KFORGE_TRAIN_DEVICE", "cpu");
  options.model_files = ModelFetchOptions::from_env();
  return options;
}

void register_training_jobs(worker::HandlerRegistry& registry, const TrainingJobOptions& options) {
  registry.add("train_sft", [options](worker::JobContext& ctx) { return run_train_sft(ctx, options); });
  registry.add("train_grpo", [options](worker::JobContext& ctx) { return run_train_grpo(ctx, options); });
  registry.add("train_rft", [options](worker::JobContext& ctx) { return run_train_rft(ctx, options); });
  registry.add("evaluate", [options](worker::JobContext& ctx) { return run_evaluate(ctx, options); });
}

std::vector<train::SuiteOp> load_suite_ops(const SuiteRef& suite, int limit) {
  std::vector<train::SuiteOp> ops;
  try {
    ops = train::load_suite(suite.dir, suite.split);
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(std::string("suite: ") + e.what());
  }
  if (ops.empty()) {
    throw std::invalid_argument("suite: no ops in split '" + suite.split + "' of " + suite.dir);
  }
  if (limit > 0 && static_cast<int>(ops.size()) > limit) ops.resize(limit);
  return ops;
}

std::string job_work_dir(const TrainingJobOptions& options, int64_t job_id) {
  return (fs::path(options.data_dir) / "training" / ("job-" + std::to_string(job_id))).string();
}

std::string job_models_dir(const TrainingJobOptions& options, int64_t job_id) {
  return (fs::path(options.data_dir) / "models" / ("job-" + std::to_string(job_id))).string();
}

void JobEvents::info(const std::string& message, const std::string& data_json) {
  db::training_event_insert(conn_, job_id_, "info", message, data_json);
}

void JobEvents::warn(const std::string& message, const std::string& data_json) {
  db::training_event_insert(conn_, job_id_, "warn", message, data_json);
}

CheckpointRegistry::CheckpointRegistry(pqxx::connection& conn, JobEvents& events, const TrainingJobOptions& options,
                                       int64_t job_id, std::string model_name, int64_t parent_id)
    : conn_(conn),
      events_(events),
      job_id_(job_id),
      model_name_(std::move(model_name)),
      parent_id_(parent_id),
      models_dir_(job_models_dir(options, job_id)) {
  fs::create_directories(models_dir_);
}

db::ModelRecord CheckpointRegistry::add(const std::string& checkpoint_dir, int step, const std::string& metrics_json) {
  ModelVersionSpec spec;
  spec.name = model_name_;
  spec.parent_id = parent_id_;
  spec.training_job_id = job_id_;
  spec.checkpoint_dir = checkpoint_dir;
  spec.dest_dir = (fs::path(models_dir_) / ("step-" + std::to_string(step))).string();
  spec.metrics_json = metrics_json;
  db::ModelRecord model = model_register_checkpoint(conn_, spec);
  if (ids_.empty() || ids_.back() != model.id) ids_.push_back(model.id);
  nlohmann::json data = {{"step", step}, {"model_id", model.id}, {"path", model.path}};
  events_.info("checkpoint " + std::to_string(step) + " registered as " + model.name + "@" + std::to_string(model.version),
               data.dump());
  return model;
}

nlohmann::json finish_training(CheckpointRegistry& registry, JobEvents& events, const std::string& out_dir,
                               const std::string& method, const std::string& count_key, int count, int resumed,
                               int64_t base_model_id) {
  std::string final_dir = train::latest_checkpoint(out_dir);
  if (final_dir.empty()) throw std::runtime_error(method + ": no checkpoint was written");
  db::ModelRecord final_model =
      registry.add(final_dir, train::checkpoint_step(final_dir), nlohmann::json{{"method", method}}.dump());
  events.info("finished", nlohmann::json{{"model_id", final_model.id}, {count_key, count}}.dump());
  return {{"model_id", final_model.id},
          {"model", final_model.name + "@" + std::to_string(final_model.version)},
          {"model_path", final_model.path},
          {count_key, count},
          {"resumed_from", resumed},
          {"base_model_id", base_model_id},
          {"checkpoint_model_ids", registry.ids()}};
}

SamplingRun prepare_sampling_run(pqxx::connection& conn, const TrainingJobOptions& options, int64_t job_id,
                                 int64_t base_model_id, const std::string& suite, int limit_ops) {
  SamplingRun run;
  auto base = db::model_get(conn, base_model_id);
  if (!base) throw std::invalid_argument("base_model: model id " + std::to_string(base_model_id) + " does not exist");
  run.base = *base;
  run.base_dir = model_files_resolve(run.base, options.model_files, "base_model").dir;
  auto ops = load_suite_ops(resolve_training_suite(suite, options.suite_dir), limit_ops);
  run.tasks = train::suite_tasks(ops, train::PromptStyle::kforge_tiny);
  run.out_dir = (fs::path(job_work_dir(options, job_id)) / "checkpoints").string();
  fs::create_directories(run.out_dir);
  run.resume_dir = train::latest_checkpoint(run.out_dir);
  run.resumed = run.resume_dir.empty() ? 0 : train::checkpoint_step(run.resume_dir);
  return run;
}

}  // namespace kforge::jobs
