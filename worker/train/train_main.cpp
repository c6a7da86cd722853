// kforge-train: SFT and GRPO for the policy model and evaluation on the op suite,
// without a database (GPU hosts, CI, `make train-tiny`). Subcommands:
//   dataset | sft | grpo | eval   (kforge-train --help lists the flags; docs/training.md)
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>

#include "common/config.h"
#include "common/log.h"
#include "worker/train/dataset.h"
#include "worker/train/evaluate.h"
#include "worker/train/grpo_trainer.h"
#include "worker/train/model_policy.h"
#include "worker/train/sft_trainer.h"
#include "worker/train/suite_tasks.h"

namespace fs = std::filesystem;
using namespace kforge::train;
using Json = nlohmann::json;

namespace {

void progress_bar(const std::string& label, int done, int total, const std::string& extra) {
  int width = 30, filled = total > 0 ? width * done / total : width;
  std::fprintf(stderr, "\r%s [%s%s] %d/%d %s", label.c_str(), std::string(filled, '#').c_str(),
               std::string(width - filled, '.').c_str(), done, total, extra.c_str());
  if (done == total) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

kforge::harness::CheckOptions check_options(const kforge::Flags& flags) {
  kforge::harness::CheckOptions options;
  options.trials = flags.get_int("trials");
  options.time = !flags.get_bool("no-time");
  options.time_budget_s = flags.get_double("time-budget-s");
  return options;
}

SamplingConfig sampling(const kforge::Flags& flags, PromptStyle style) {
  SamplingConfig config;
  config.temperature = flags.get_double("temperature");
  config.top_p = flags.get_double("top-p");
  config.max_new_tokens = flags.get_int("max-new-tokens");
  config.stop = prompt_stop_strings(style);
  return config;
}

PromptStyle style_of(const kforge::Flags& flags) {
  PromptStyle style;
  if (!prompt_style_from_name(flags.get("template"), style))
    throw std::runtime_error("unknown --template '" + flags.get("template") + "' (kforge-tiny, chatml)");
  return style;
}

std::vector<SuiteOp> first_n(std::vector<SuiteOp> ops, int limit) {
  if (limit > 0 && static_cast<int>(ops.size()) > limit) ops.resize(limit);
  return ops;
}

// "K/N": keep ops K, K+N, K+2N, ... so N processes can build one dataset in parallel.
std::vector<SuiteOp> shard_of(std::vector<SuiteOp> ops, const std::string& shard) {
  if (shard.empty()) return ops;
  int index = -1, count = 0;
  char extra = 0;
  if (std::sscanf(shard.c_str(), "%d/%d%c", &index, &count, &extra) != 2 || count < 1 || index < 0 || index >= count)
    throw std::runtime_error("--shard must be K/N with 0 <= K < N, got '" + shard + "'");
  std::vector<SuiteOp> kept;
  for (size_t op_idx = index; op_idx < ops.size(); op_idx += count) kept.push_back(std::move(ops[op_idx]));
  return kept;
}

int dataset_command(const kforge::Flags& flags) {
  auto ops = shard_of(first_n(load_suite(flags.get("suite"), "train"), flags.get_int("limit-ops")), flags.get("shard"));
  DatasetOptions options;
  options.max_variants_per_op = flags.get_int("variants");
  options.style = style_of(flags);
  options.check = check_options(flags);
  options.max_check_elements = flags.get_int("max-check-elements");
  DatasetStats stats;
  auto records = build_sft_dataset(ops, options, &stats, [](int done, int total) { progress_bar("dataset", done, total, ""); });
  write_dataset_jsonl(flags.get("out"), records);
  std::cout << Json{{"records", records.size()}, {"ops", stats.ops}, {"ops_unsupported", stats.ops_unsupported},
                    {"ops_with_examples", stats.ops_with_examples}, {"variants_checked", stats.variants_checked},
                    {"variants_correct", stats.variants_correct}, {"out", flags.get("out")}}
                   .dump()
            << "\n";
  return 0;
}

int sft_command(const kforge::Flags& flags) {
  auto pairs = read_sft_jsonl(flags.get("data"));
  // Validation: pairs of every tenth op (by name order) are held out of training.
  std::vector<SftExample> train, validation;
  {
    std::ifstream in(flags.get("data"));
    std::map<std::string, int> op_index;
    std::string line;
    size_t pair_idx = 0;
    while (std::getline(in, line)) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      std::string op = Json::parse(line).value("op", std::to_string(pair_idx));
      int index = op_index.emplace(op, op_index.size()).first->second;
      (index % 10 == 9 ? validation : train).push_back(pairs[pair_idx++]);
    }
  }
  std::unique_ptr<ModelPolicy> policy;
  if (!flags.get("init").empty()) {
    policy = ModelPolicy::from_dir(flags.get("init"), {flags.get("device"), "float32"});
  } else {
    std::vector<std::string> corpus;
    for (const auto& pair : pairs) corpus.push_back(pair.prompt + pair.completion);
    TinyModelOptions tiny{flags.get("preset"), flags.get_int("vocab-size"), static_cast<uint64_t>(flags.get_int("seed")),
                          flags.get("device")};
    policy = bootstrap_tiny_model(corpus, tiny);
  }
  SftConfig config;
  config.max_steps = flags.get_int("steps");
  config.batch_size = flags.get_int("batch");
  config.micro_batch = flags.get_int("micro-batch");
  config.max_tokens = flags.get_int("max-tokens");
  config.eval_every = flags.get_int("eval-every");
  config.checkpoint_every = flags.get_int("checkpoint-every");
  config.out_dir = flags.get("out-dir");
  config.seed = flags.get_int("seed");
  config.optim.lr = flags.get_double("lr");
  config.optim.warmup_steps = flags.get_int("warmup");
  fs::create_directories(config.out_dir);
  SftTrainer trainer(*policy, train, validation, config);
  int resumed = trainer.resume();
  std::ofstream metrics(config.out_dir + "/metrics.jsonl", resumed ? std::ios::app : std::ios::trunc);
  SftResult result = trainer.run([&](const SftStepMetrics& m) {
    metrics << m.to_json() << "\n" << std::flush;
    char extra[128];
    std::snprintf(extra, sizeof extra, "loss %.3f%s", m.loss,
                  m.val_loss ? (" val " + std::to_string(*m.val_loss)).c_str() : "");
    progress_bar("sft", m.step, m.total_steps, extra);
  });
  std::cout << Json{{"steps", result.steps}, {"resumed_from", result.resumed_from}, {"final_loss", result.final_loss},
                    {"val_loss", result.val_loss ? Json(*result.val_loss) : Json()}, {"train_pairs", train.size()},
                    {"validation_pairs", validation.size()}, {"skipped_long", result.skipped_long},
                    {"checkpoint", result.checkpoint}}
                   .dump()
            << "\n";
  return 0;
}

int eval_command(const kforge::Flags& flags) {
  PromptStyle style = style_of(flags);
  auto ops = first_n(load_suite(flags.get("suite"), flags.get("split")), flags.get_int("limit-ops"));
  auto policy = ModelPolicy::from_dir(flags.get("model"), {flags.get("device"), "float32"}, false);
  // --serial-timing: verify every sample in parallel untimed, then time the correct ones
  // one at a time with nothing else running (evaluate.h).
  kforge::harness::CheckOptions options = check_options(flags);
  bool serial_timing = flags.get_bool("serial-timing") && options.time;
  kforge::harness::CheckOptions verify_options = options;
  if (serial_timing) verify_options.time = false;
  HarnessChecker checker(verify_options, flags.get_int("max-check-elements"));
  HarnessChecker timing_checker(options, flags.get_int("max-check-elements"));
  EvalConfig config;
  if (serial_timing) config.timing_checker = &timing_checker;
  config.samples_per_op = flags.get_int("samples");
  config.k = flags.get_int("k");
  config.check_threads = flags.get_int("check-threads");
  config.seed = flags.get_int("seed");
  config.sampling = sampling(flags, style);
  std::vector<OpSamples> raw;
  EvalSummary summary = evaluate_policy(*policy, suite_tasks(ops, style), checker, config, &raw);
  Json out = Json::parse(eval_summary_to_json(summary));
  out["model"] = flags.get("model");
  out["split"] = flags.get("split");
  out["target"] = "opencl";
  Json outcomes = Json::object();
  for (const auto& op : raw)
    for (const auto& sample : op.samples) outcomes[outcome_name(sample.outcome)] = outcomes.value(outcome_name(sample.outcome), 0) + 1;
  out["outcomes"] = outcomes;
  out["serial_timing"] = serial_timing;
  if (!flags.get("samples-out").empty()) {
    std::ofstream samples(flags.get("samples-out"));
    for (const auto& op : raw)
      for (const auto& sample : op.samples)
        samples << Json{{"op", op.op}, {"outcome", outcome_name(sample.outcome)}, {"message", sample.message},
                        {"speedup", sample.speedup}, {"suspicious", sample.suspicious}, {"completion", sample.text}}
                       .dump()
                << "\n";
  }
  if (!flags.get("out").empty()) std::ofstream(flags.get("out")) << out.dump(2) << "\n";
  out.erase("per_op");
  std::cout << out.dump() << "\n";
  return 0;
}

int grpo_command(const kforge::Flags& flags) {
  PromptStyle style = style_of(flags);
  auto ops = first_n(load_suite(flags.get("suite"), "train"), flags.get_int("limit-ops"));
  std::vector<Task> tasks = suite_tasks(ops, style);
  auto policy = ModelPolicy::from_dir(flags.get("model"), {flags.get("device"), "float32"});
  std::unique_ptr<ModelPolicy> reference;
  GrpoConfig config;
  config.group_size = flags.get_int("group");
  config.tasks_per_step = flags.get_int("tasks-per-step");
  config.steps = flags.get_int("steps");
  config.micro_batch = flags.get_int("micro-batch");
  config.check_threads = flags.get_int("check-threads");
  config.seed = flags.get_int("seed");
  config.sampling = sampling(flags, style);
  config.loss.kl_beta = flags.get_double("kl-beta");
  config.overlong_buffer_tokens = flags.get_int("overlong-buffer");
  config.optim.lr = flags.get_double("lr");
  config.optim.warmup_steps = flags.get_int("warmup");
  config.optim.total_steps = config.steps;
  config.optim.weight_decay = 0.0;
  if (config.loss.kl_beta > 0) reference = ModelPolicy::from_dir(flags.get("model"), {flags.get("device"), "float32"}, false);
  HarnessChecker checker(check_options(flags), flags.get_int("max-check-elements"));
  GrpoTrainer trainer(*policy, reference.get(), checker, config);
  std::string out_dir = flags.get("out-dir");
  fs::create_directories(out_dir);
  std::ofstream metrics(out_dir + "/metrics.jsonl");
  // Tasks rotate through a seeded shuffle of the train split.
  std::vector<size_t> order(tasks.size());
  for (size_t idx = 0; idx < order.size(); ++idx) order[idx] = idx;
  std::mt19937_64 rng(config.seed);
  std::shuffle(order.begin(), order.end(), rng);
  size_t cursor = 0;
  for (int step_idx = 0; step_idx < config.steps; ++step_idx) {
    std::vector<Task> batch;
    for (int task_idx = 0; task_idx < config.tasks_per_step; ++task_idx) batch.push_back(tasks[order[cursor++ % order.size()]]);
    GrpoStepMetrics m = trainer.step(batch);
    metrics << m.to_json() << "\n" << std::flush;
    char extra[160];
    std::snprintf(extra, sizeof extra, "reward %.3f correct %.2f kept %d/%d", m.reward_mean, m.correct_rate, m.groups_kept,
                  m.groups_kept + m.groups_dropped);
    progress_bar("grpo", step_idx + 1, config.steps, extra);
  }
  std::string final_dir = out_dir + "/final";
  fs::create_directories(final_dir);
  policy->save(final_dir);
  std::cout << Json{{"steps", config.steps}, {"model", final_dir}}.dump() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  kforge::Flags flags({
      {"suite", "KFORGE_SUITE_DIR", "suite", "op suite directory"},
      {"split", "", "heldout", "eval: suite split (train, heldout)"},
      {"limit-ops", "", "0", "use only the first N ops (0 = all)"},
      {"template", "", "kforge-tiny", "prompt template: kforge-tiny or chatml"},
      {"out", "", "", "dataset: JSONL path; eval: JSON path"},
      {"out-dir", "", "var/train", "sft/grpo: checkpoints and metrics.jsonl"},
      {"data", "", "", "sft: JSONL of prompt/completion pairs"},
      {"init", "", "", "sft: start from this HF directory instead of bootstrapping kforge-tiny"},
      {"model", "", "", "grpo/eval: HF model directory"},
      {"preset", "", "kforge-tiny", "sft bootstrap preset (kforge-tiny, kforge-micro, kforge-20m...)"},
      {"vocab-size", "", "4096", "sft bootstrap BPE vocabulary"},
      {"device", "KFORGE_TRAIN_DEVICE", "cpu", "cpu or cuda"},
      {"variants", "", "4", "dataset: teacher schedules per op"},
      {"shard", "", "", "dataset: K/N, only ops K, K+N, ... (run N processes, concatenate)"},
      {"trials", "", "3", "harness correctness trials"},
      {"no-time", "", "false", "skip harness timing (speedup 0)", true},
      {"time-budget-s", "", "0.3", "harness timing budget per side"},
      {"serial-timing", "", "false", "eval: verify in parallel, then time correct kernels one at a time", true},
      {"samples-out", "", "", "eval: JSONL of every sample (op, outcome, harness message, completion)"},
      {"max-check-elements", "", "0", "check on main shapes shrunk to this many input elements (0 = full shapes)"},
      {"steps", "", "100", "optimizer steps"},
      {"batch", "", "8", "sft: sequences per step"},
      {"micro-batch", "", "4", "sequences per forward"},
      {"max-tokens", "", "1536", "sft: longest prompt + completion"},
      {"eval-every", "", "25", "sft: validation loss every N steps"},
      {"checkpoint-every", "", "50", "sft: checkpoint every N steps"},
      {"lr", "", "1e-3", "peak learning rate"},
      {"warmup", "", "10", "warm-up steps"},
      {"seed", "", "0", "seed"},
      {"group", "", "8", "grpo: samples per op"},
      {"tasks-per-step", "", "4", "grpo: ops per step"},
      {"kl-beta", "", "0", "grpo: k3 KL weight (needs a reference copy)"},
      {"overlong-buffer", "", "0", "grpo: soft overlong penalty window (tokens)"},
      {"check-threads", "", "2", "checks at once"},
      {"samples", "", "4", "eval: samples per op"},
      {"k", "", "4", "eval: pass@k"},
      {"temperature", "", "0.8", "sampling temperature"},
      {"top-p", "", "0.95", "sampling top-p"},
      {"max-new-tokens", "", "768", "completion limit"},
      {"log-level", "KFORGE_LOG_LEVEL", "warn", "debug, info, warn or error"},
  });
  if (auto error = flags.parse(argc, argv)) {
    std::cerr << "kforge-train: " << *error << "\n";
    return 2;
  }
  if (flags.help_requested() || flags.positional().empty()) {
    std::cout << flags.usage("kforge-train dataset|sft|grpo|eval", "SFT, GRPO and evaluation without a database");
    return flags.help_requested() ? 0 : 2;
  }
  kforge::log_set_level(flags.get("log-level"));
  const std::string command = flags.positional()[0];
  try {
    at::manual_seed(flags.get_int("seed"));
    if (command == "dataset") return dataset_command(flags);
    if (command == "sft") return sft_command(flags);
    if (command == "grpo") return grpo_command(flags);
    if (command == "eval") return eval_command(flags);
    std::cerr << "kforge-train: unknown command '" << command << "' (dataset, sft, grpo, eval)\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "kforge-train " << command << ": " << e.what() << "\n";
    return 1;
  }
}
