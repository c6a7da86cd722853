// The `train_sft` job runner (training_jobs.h): pairs from a JSONL dataset or from
// harness-verified teacher kernels of the suite's train split (built once, cached in
// the job's directory so a resumed attempt trains on the same pairs), then
// kforge::train::SftTrainer with per-step metrics, checkpoints registered as model
// versions, and resume from the newest checkpoint after a crash. Test: ctest -R jobs_training_test.
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/log.h"
#include "db/connection.h"
#include "db/models.h"
#include "worker/jobs/model_files.h"
#include "worker/jobs/training_support.h"
#include "worker/train/dataset.h"
#include "worker/train/model_policy.h"
#include "worker/train/sft_trainer.h"
#include "worker/train/train_config.h"

namespace kforge::jobs {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Pairs with the op each came from ("" when the line has no "op" field).
struct Pairs {
  std::vector<train::SftExample> examples;
  std::vector<std::string> ops;
};

Pairs read_pairs(const std::string& path) {
  Pairs pairs;
  try {
    pairs.examples = train::read_sft_jsonl(path);
  } catch (const std::exception& e) {
    throw std::invalid_argument(std::string("dataset: ") + e.what());
  }
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json record = json::parse(line, nullptr, false);
    pairs.ops.push_back(record.is_object() && record.contains("op") && record["op"].is_string() ? record["op"].get<std::string>()
                                                                                               : "");
  }
  pairs.ops.resize(pairs.examples.size());
  return pairs;
}

// Builds the teacher dataset op by op (so cancellation is honoured between ops) and
// caches it as <work>/dataset.jsonl (written to .tmp and renamed).
std::string build_suite_dataset(worker::JobContext& ctx, const SftJobArgs& args, const TrainingJobOptions& options,
                                const std::string& work_dir, JobEvents& events) {
  fs::path cached = fs::path(work_dir) / "dataset.jsonl";
  if (fs::exists(cached)) return cached.string();
  SuiteRef suite = resolve_training_suite(args.suite, options.suite_dir);
  auto ops = load_suite_ops(suite, args.check.limit_ops);
  train::DatasetOptions dataset_options = train::dataset_options(args, train::PromptStyle::kforge_tiny, 0.3);
  std::vector<train::DatasetRecord> records;
  train::DatasetStats total;
  for (size_t op_idx = 0; op_idx < ops.size(); ++op_idx) {
    if (ctx.cancelled()) throw std::runtime_error("stopped while building the dataset");
    ctx.report_progress(json{{"phase", "dataset"}, {"ops_done", op_idx}, {"ops_total", ops.size()},
                             {"pairs", records.size()}}.dump());
    train::DatasetStats stats;
    auto op_records = train::build_sft_dataset({ops[op_idx]}, dataset_options, &stats);
    records.insert(records.end(), op_records.begin(), op_records.end());
    total.ops += stats.ops;
    total.ops_unsupported += stats.ops_unsupported;
    total.ops_with_examples += stats.ops_with_examples;
    total.variants_checked += stats.variants_checked;
    total.variants_correct += stats.variants_correct;
    total.ops_failed.insert(total.ops_failed.end(), stats.ops_failed.begin(), stats.ops_failed.end());
  }
  json stats_json = {{"ops", total.ops},
                     {"ops_unsupported", total.ops_unsupported},
                     {"ops_with_examples", total.ops_with_examples},
                     {"variants_checked", total.variants_checked},
                     {"variants_correct", total.variants_correct},
                     {"ops_failed", total.ops_failed},
                     {"pairs", records.size()}};
  if (records.empty()) {
    throw std::invalid_argument("suite: the teacher produced no verified kernel for the " + std::to_string(ops.size()) +
                                " ops of the train split (" + stats_json.dump() + ")");
  }
  fs::path tmp = cached;
  tmp += ".tmp";
  train::write_dataset_jsonl(tmp.string(), records);
  fs::rename(tmp, cached);
  events.info("dataset built from suite '" + args.suite + "'", stats_json.dump());
  return cached.string();
}

// Validation: the pairs of every tenth op (first-seen order) are held out, as kforge-train does.
void split_pairs(const Pairs& pairs, std::vector<train::SftExample>& train_set,
                 std::vector<train::SftExample>& validation) {
  std::map<std::string, size_t> op_index;
  for (size_t pair_idx = 0; pair_idx < pairs.examples.size(); ++pair_idx) {
    std::string op = pairs.ops[pair_idx].empty() ? std::to_string(pair_idx) : pairs.ops[pair_idx];
    size_t index = op_index.emplace(op, op_index.size()).first->second;
    (index % 10 == 9 ? validation : train_set).push_back(pairs.examples[pair_idx]);
  }
}

std::string preset_for(const std::string& output_model) {
  for (const auto& name : policy::model_preset_names()) {
    if (name == output_model) return name;
  }
  return output_model == "kforge-micro" ? output_model : "kforge-tiny";
}

json optional_number(const std::optional<double>& value) { return value ? json(*value) : json(nullptr); }

worker::JobOutcome run(worker::JobContext& ctx, const TrainingJobOptions& options) {
  SftJobArgs args;
  try {
    args = parse_sft_job_args(ctx.args_json());
  } catch (const std::invalid_argument& e) {
    return worker::JobOutcome::fail(e.what(), /*retryable=*/false);
  }
  const int64_t job_id = ctx.job().id;
  auto conn = db::connect(options.database_url);
  JobEvents events(*conn, job_id);
  std::string work_dir = job_work_dir(options, job_id);
  std::string out_dir = (fs::path(work_dir) / "checkpoints").string();
  fs::create_directories(out_dir);

  // Inputs: everything here is the payload's fault when it fails, so no retry.
  Pairs pairs;
  std::unique_ptr<train::ModelPolicy> policy;
  std::optional<db::ModelRecord> base;
  std::string base_dir;
  try {
    if (args.base_model_id > 0) {
      base = db::model_get(*conn, args.base_model_id);
      if (!base) throw std::invalid_argument("base_model: model id " + std::to_string(args.base_model_id) + " does not exist");
      base_dir = model_files_resolve(*base, options.model_files, "base_model").dir;
    }
    std::string data_path = args.dataset;
    if (!data_path.empty()) {
      std::error_code ec;
      if (!fs::is_regular_file(data_path, ec)) {
        throw std::invalid_argument("dataset: no file '" + data_path + "' on this worker");
      }
    } else {
      data_path = build_suite_dataset(ctx, args, options, work_dir, events);
    }
    pairs = read_pairs(data_path);
    if (pairs.examples.empty()) throw std::invalid_argument("dataset: '" + data_path + "' holds no pairs");
    // The held-out split stays out of training, whoever built the file.
    if (!args.dataset.empty() && fs::is_directory(options.suite_dir)) {
      auto leaks = train::heldout_leaks(pairs.examples, train::load_suite(options.suite_dir, "heldout"));
      if (!leaks.empty()) {
        throw std::invalid_argument("dataset: holds " + std::to_string(leaks.size()) + " held-out op(s), first " +
                                    leaks.front() + ": the held-out split must stay out of training");
      }
    }
  } catch (const std::invalid_argument& e) {
    return worker::JobOutcome::fail(e.what(), /*retryable=*/false);
  }
  if (ctx.cancelled()) return worker::JobOutcome::fail("stopped before training");
  std::vector<train::SftExample> train_set, validation;
  split_pairs(pairs, train_set, validation);

  // The policy: the newest checkpoint's (a resumed attempt), the base version's, or a
  // fresh model of the preset whose BPE is trained on this dataset.
  policy::LoadOptions load{options.device, "float32"};
  std::string resume_dir = train::latest_checkpoint(out_dir);
  if (!resume_dir.empty()) {
    policy = train::ModelPolicy::from_dir(resume_dir, load);
  } else if (base) {
    policy = train::ModelPolicy::from_dir(base_dir, load);
  } else {
    // The BPE sees every pair, as `kforge-train sft` does: the same dataset and seed give
    // the same model through the API and through the command line.
    std::vector<std::string> corpus;
    for (const auto& pair : pairs.examples) corpus.push_back(pair.prompt + pair.completion);
    train::TinyModelOptions tiny{preset_for(args.output_model), args.vocab_size, args.seed, options.device};
    policy = train::bootstrap_tiny_model(corpus, tiny);
  }

  train::SftConfig config = train::sft_config(args);
  config.out_dir = out_dir;
  std::unique_ptr<train::SftTrainer> trainer;
  try {
    trainer = std::make_unique<train::SftTrainer>(*policy, train_set, validation, config);
  } catch (const std::invalid_argument& e) {
    return worker::JobOutcome::fail(std::string("hyperparameters: ") + e.what(), /*retryable=*/false);
  }

  CheckpointRegistry registry(*conn, events, options, job_id, args.output_model, args.base_model_id);
  auto register_checkpoint = [&](const std::string& checkpoint, int step, const json& metrics) {
    return registry.add(checkpoint, step, metrics.dump());
  };

  // What a version's `metrics` say about the run at its checkpoint.
  auto checkpoint_metrics = [&](int step, std::optional<double> loss, std::optional<double> val_loss) {
    return json{{"method", "sft"},
                {"step", step},
                {"total_steps", trainer->total_steps()},
                {"loss", optional_number(loss)},
                {"val_loss", optional_number(val_loss)},
                {"train_pairs", train_set.size()},
                {"validation_pairs", validation.size()}};
  };
  int resumed = trainer->resume();
  if (resumed > 0) {
    events.info("resumed from checkpoint " + std::to_string(resumed),
                json{{"attempt", ctx.attempt()}, {"step", resumed}, {"checkpoint", resume_dir}}.dump());
    // A crash between writing the checkpoint and registering it must not lose the version.
    register_checkpoint(resume_dir, resumed, checkpoint_metrics(resumed, std::nullopt, std::nullopt));
  } else {
    events.info("started", json{{"attempt", ctx.attempt()},
                                {"train_pairs", train_set.size()},
                                {"validation_pairs", validation.size()},
                                {"total_steps", trainer->total_steps()},
                                {"base_model_id", args.base_model_id}}
                               .dump());
  }

  std::atomic<bool> stop{ctx.cancelled()};
  train::SftResult result = trainer->run(
      [&](const train::SftStepMetrics& step) {
        db::training_metric_insert(*conn, job_id, step.step, step.to_json());
        ctx.report_progress(json{{"phase", "training"},
                                 {"step", step.step},
                                 {"total_steps", step.total_steps},
                                 {"loss", step.loss},
                                 {"val_loss", optional_number(step.val_loss)},
                                 {"resumed_from", resumed}}
                                .dump());
        if (!step.checkpoint.empty()) {
          register_checkpoint(step.checkpoint, step.step, checkpoint_metrics(step.step, step.loss, step.val_loss));
        }
        if (ctx.cancelled()) stop = true;
      },
      &stop);
  if (result.stopped) {
    events.warn("stopped at step " + std::to_string(result.steps) + "; the newest checkpoint is kept for a resume");
    return worker::JobOutcome::fail("stopped at step " + std::to_string(result.steps));
  }

  // The final step always writes a checkpoint; it is registered already unless this
  // attempt resumed at the very end (then register_checkpoint returns the existing row).
  std::string final_dir = train::latest_checkpoint(out_dir);
  if (final_dir.empty()) return worker::JobOutcome::fail("sft: no checkpoint was written", /*retryable=*/false);
  db::ModelRecord final_model = register_checkpoint(final_dir, result.steps,
                                                    checkpoint_metrics(result.steps, result.final_loss, result.val_loss));
  events.info("finished", json{{"model_id", final_model.id}, {"steps", result.steps}}.dump());
  json out = {{"model_id", final_model.id},
              {"model", final_model.name + "@" + std::to_string(final_model.version)},
              {"model_path", final_model.path},
              {"steps", result.steps},
              {"total_steps", trainer->total_steps()},
              {"resumed_from", result.resumed_from},
              {"final_loss", result.final_loss},
              {"val_loss", optional_number(result.val_loss)},
              {"train_pairs", train_set.size()},
              {"validation_pairs", validation.size()},
              {"skipped_long", result.skipped_long},
              {"checkpoint_model_ids", registry.ids()}};
  return worker::JobOutcome::complete(out.dump());
}

}  // namespace

worker::JobOutcome run_train_sft(worker::JobContext& ctx, const TrainingJobOptions& options) {
  try {
    return run(ctx, options);
  } catch (const std::invalid_argument& e) {
    return worker::JobOutcome::fail(e.what(), /*retryable=*/false);
  }
}

}  // namespace kforge::jobs
