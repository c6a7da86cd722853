// kforge-train: SFT, GRPO, expert iteration and evaluation without a database (GPU hosts, CI); only wiring:
// flags from train_cli.h, configs from train_config.h. `kforge-train <command> --help`.
// Docs: docs/training.md. Test: ctest -R spec_agreement_test.
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <sstream>

#include "common/config.h"
#include "common/elapsed.h"
#include "common/log.h"
#include "worker/policy/autocast.h"
#include "worker/train/curriculum.h"
#include "worker/train/dataset.h"
#include "worker/train/distributed.h"
#include "worker/train/evaluate.h"
#include "worker/train/grpo_trainer.h"
#include "worker/train/model_policy.h"
#include "worker/train/sft_trainer.h"
#include "worker/train/suite_tasks.h"
#include "worker/train/train_cli.h"
#include "worker/train/train_config.h"

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

// An HF directory as a policy on `device` (default --device), float32 weights, with
// --precision's autocast.
std::unique_ptr<ModelPolicy> load_policy(const kforge::Flags& flags, const std::string& dir, bool trainable = true,
                                         const std::string& device = "") {
  auto policy = ModelPolicy::from_dir(dir, {device.empty() ? flags.get("device") : device, "float32"}, trainable);
  policy->set_autocast(kforge::policy::parse_precision(flags.get("precision")));
  return policy;
}

int dataset_command(const kforge::Flags& flags) {
  kforge::spec::SftArgs args = sft_args(flags);
  auto ops = shard_of(first_n(load_suite(flags.get("suite"), "train"), args.check.limit_ops), flags.get("shard"));
  DatasetOptions options = dataset_options(args, style_of(flags), flags.get_double("time-budget-s"));
  options.targets.clear();
  std::stringstream targets(flags.get("targets"));
  for (std::string target; std::getline(targets, target, ',');)
    if (!target.empty()) options.targets.push_back(target);
  if (flags.get("kernel-names") != "role" && flags.get("kernel-names") != "op")
    throw std::runtime_error("--kernel-names must be role or op, got '" + flags.get("kernel-names") + "'");
  options.role_kernel_names = flags.get("kernel-names") == "role";
  options.inductor = flags.get_bool("inductor");
  DatasetStats stats;
  auto records = build_sft_dataset(ops, options, &stats, [](int done, int total) { progress_bar("dataset", done, total, ""); });
  write_dataset_jsonl(flags.get("out"), records);
  std::cout << Json{{"records", records.size()}, {"ops", stats.ops}, {"ops_unsupported", stats.ops_unsupported},
                    {"ops_with_examples", stats.ops_with_examples}, {"variants_checked", stats.variants_checked},
                    {"variants_correct", stats.variants_correct}, {"targets", options.targets},
                    {"targets_unavailable", stats.targets_unavailable}, {"inductor_harvested", stats.inductor_harvested},
                    {"inductor_correct", stats.inductor_correct}, {"inductor_refused", stats.inductor_refused},
                    {"ops_failed", stats.ops_failed},
                    {"out", flags.get("out")}}
                   .dump()
            << "\n";
  return 0;
}

int sft_command(const kforge::Flags& flags) {
  kforge::spec::SftArgs args = sft_args(flags);
  auto pairs = read_sft_jsonl(flags.get("data"));
  // The held-out split stays out of training whoever built the data file.
  if (fs::is_directory(flags.get("suite"))) {
    auto leaks = heldout_leaks(pairs, load_suite(flags.get("suite"), "heldout"));
    if (!leaks.empty())
      throw std::runtime_error("--data holds held-out ops (" + std::to_string(leaks.size()) + ", first " + leaks.front() +
                               "): the held-out split must stay out of training");
  } else {
    std::cerr << "kforge-train sft: no suite at '" << flags.get("suite") << "' (--suite): held-out check skipped\n";
  }
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
  // Data parallel when KFORGE_WORLD_SIZE > 1 (docs/training.md "Data-parallel training"):
  // the group first, so an nccl rank is bound to its GPU before the model is built there.
  DistributedConfig dist = DistributedConfig::from_env();
  std::unique_ptr<DataParallel> data_parallel;
  if (dist.enabled()) data_parallel = std::make_unique<DataParallel>(dist, dist.backend_for(flags.get("device")));
  const std::string device = dist.rank_device(flags.get("device"));  // cuda:<local rank> for a cuda rank
  std::unique_ptr<ModelPolicy> policy;
  if (!flags.get("init").empty()) {
    policy = load_policy(flags, flags.get("init"), true, device);
  } else {
    std::vector<std::string> corpus;
    for (const auto& pair : pairs) corpus.push_back(pair.prompt + pair.completion);
    TinyModelOptions tiny{flags.get("preset"), args.vocab_size, args.seed, device};
    policy = bootstrap_tiny_model(corpus, tiny);
    policy->set_autocast(kforge::policy::parse_precision(flags.get("precision")));
  }
  SftConfig config = sft_config(args);
  config.out_dir = flags.get("out-dir");
  fs::create_directories(config.out_dir);
  config.data_parallel = data_parallel.get();
  SftTrainer trainer(*policy, train, validation, config);
  int resumed = trainer.resume();
  // Rank 0 writes metrics.jsonl (and the checkpoints); the others their own metrics file.
  std::string metrics_name = dist.rank == 0 ? "metrics.jsonl" : "metrics-rank" + std::to_string(dist.rank) + ".jsonl";
  std::ofstream metrics(config.out_dir + "/" + metrics_name, resumed ? std::ios::app : std::ios::trunc);
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
                    {"checkpoint", result.checkpoint}, {"rank", dist.rank}, {"world_size", dist.world_size},
                    {"backend", data_parallel ? Json(data_parallel->backend()) : Json()}}
                   .dump()
            << "\n";
  return 0;
}

int eval_command(const kforge::Flags& flags) {
  kforge::spec::EvaluateArgs args = evaluate_args(flags);
  PromptStyle style = style_of(flags);
  auto ops = first_n(load_suite(flags.get("suite"), flags.get("split")), args.check.limit_ops);
  auto policy = load_policy(flags, flags.get("model"), false);
  // --serial-timing: verify every sample in parallel untimed, then time the correct ones
  // one at a time with nothing else running (evaluate.h).
  kforge::harness::CheckOptions options = check_options(args.check, flags.get_double("time-budget-s"));
  bool serial_timing = flags.get_bool("serial-timing") && options.time;
  kforge::harness::CheckOptions verify_options = options;
  if (serial_timing) verify_options.time = false;
  HarnessChecker checker(verify_options, args.check.max_check_elements, HarnessChecker::idle_for(args.check.threads));
  HarnessChecker timing_checker(options, args.check.max_check_elements, HarnessChecker::idle_for(1));
  EvalConfig config = eval_config(args, style);
  if (serial_timing) config.timing_checker = &timing_checker;
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
                       .dump(-1, ' ', false, Json::error_handler_t::replace)  // sampled bytes need not be UTF-8
                << "\n";
  }
  if (!flags.get("out").empty()) std::ofstream(flags.get("out")) << out.dump(2) << "\n";
  out.erase("per_op");
  std::cout << out.dump() << "\n";
  return 0;
}

int grpo_command(const kforge::Flags& flags) {
  kforge::spec::GrpoArgs args = grpo_args(flags);
  PromptStyle style = style_of(flags);
  auto ops = first_n(load_suite(flags.get("suite"), "train"), args.check.limit_ops);
  std::vector<Task> tasks = suite_tasks(ops, style);
  auto policy = load_policy(flags, flags.get("model"));
  std::unique_ptr<ModelPolicy> reference;
  GrpoConfig config = grpo_config(args, style);
  if (config.loss.kl_beta > 0) reference = load_policy(flags, flags.get("model"), false);
  HarnessChecker checker(check_options(args.check, flags.get_double("time-budget-s")), args.check.max_check_elements,
                         HarnessChecker::idle_for(args.check.threads));
  GrpoTrainer trainer(*policy, reference.get(), checker, config);
  std::string out_dir = flags.get("out-dir");
  fs::create_directories(out_dir);
  std::ofstream metrics(out_dir + "/metrics.jsonl");
  // Tasks rotate through a seeded shuffle of the train split (only the learnable ones
  // with --curriculum-every N, re-measured every N steps).
  TaskSchedule schedule(tasks, config.seed);
  std::optional<CurriculumStats> curriculum;
  const double max_seconds = flags.get_double("max-seconds");
  if (max_seconds < 0) throw std::invalid_argument("--max-seconds must be >= 0, not " + flags.get("max-seconds"));
  const auto started = std::chrono::steady_clock::now();
  int steps_done = 0;
  for (int step_idx = 0; step_idx < config.steps; ++step_idx) {
    if (max_seconds > 0 && kforge::seconds_since(started) >= max_seconds) {
      kforge::log_warn("grpo", "stopped at the wall-clock budget",
               {{"steps_done", std::to_string(steps_done)}, {"max_seconds", flags.get("max-seconds")}});
      break;
    }
    if (auto refreshed = refresh_curriculum(schedule, *policy, checker, config.sampling, config.check_threads, config.seed,
                                            args.curriculum_every, args.curriculum_samples, step_idx + 1)) {
      curriculum = refreshed;
      std::ofstream(out_dir + "/curriculum.jsonl", std::ios::app) << Json{{"step", step_idx + 1}}.dump() << " "
                                                                    << refreshed->to_json() << "\n";
    }
    GrpoStepMetrics m = trainer.step(schedule.batch(step_idx + 1, config.tasks_per_step));
    if (curriculum) {
      m.curriculum_tasks = schedule.active();
      m.curriculum_mean_pass1 = curriculum->mean_pass1;
    }
    metrics << m.to_json() << "\n" << std::flush;
    char extra[160];
    std::snprintf(extra, sizeof extra, "reward %.3f correct %.2f kept %d/%d", m.reward_mean, m.correct_rate, m.groups_kept,
                  m.groups_kept + m.groups_dropped);
    progress_bar("grpo", step_idx + 1, config.steps, extra);
    int step = step_idx + 1;
    steps_done = step;
    if (args.checkpoint_every > 0 && step % args.checkpoint_every == 0 && step < config.steps)
      write_checkpoint(out_dir, step, *policy, trainer.optimizer(), Json{{"method", "grpo"}}, /*keep=*/2);
  }
  std::string final_dir = out_dir + "/final";
  fs::create_directories(final_dir);
  policy->save(final_dir);
  std::cout << Json{{"steps", steps_done}, {"steps_asked", config.steps}, {"model", final_dir}}.dump() << "\n";
  return 0;
}

// Expert iteration: rounds of sample -> verify -> fine-tune on the train split; a
// checkpoint per round (with the kept pool), the final policy in final/.
int rft_command(const kforge::Flags& flags) {
  kforge::spec::RftArgs args = rft_args(flags);
  PromptStyle style = style_of(flags);
  auto ops = first_n(load_suite(flags.get("suite"), "train"), args.check.limit_ops);
  std::vector<Task> tasks = suite_tasks(ops, style);
  auto policy = load_policy(flags, flags.get("model"));
  HarnessChecker checker(check_options(args.check, flags.get_double("time-budget-s")), args.check.max_check_elements,
                         HarnessChecker::idle_for(args.check.threads));
  RftConfig config = rft_config(args, style);
  RftTrainer trainer(*policy, checker, config);
  std::string out_dir = flags.get("out-dir");
  fs::create_directories(out_dir);
  std::ofstream metrics(out_dir + "/metrics.jsonl");
  for (int round = 1; round <= config.rounds; ++round) {
    RftRoundMetrics m = trainer.round(tasks);
    metrics << m.to_json() << "\n" << std::flush;
    char extra[160];
    std::snprintf(extra, sizeof extra, "correct %.2f solved %d/%zu pool %d loss %.3f", m.correct_rate, m.tasks_solved,
                  tasks.size(), m.pool_size, m.sft_loss);
    progress_bar("rft", round, config.rounds, extra);
    std::ostringstream pool;
    for (const auto& example : trainer.pool())
      pool << Json{{"prompt", example.prompt}, {"completion", example.completion}}.dump() << "\n";
    write_checkpoint(out_dir, round, *policy, nullptr, Json{{"method", "rft"}}, /*keep=*/2, {{"kept.jsonl", pool.str()}});
  }
  std::string final_dir = out_dir + "/final";
  fs::create_directories(final_dir);
  policy->save(final_dir);
  std::cout << Json{{"rounds", config.rounds}, {"kept", trainer.pool().size()}, {"model", final_dir}}.dump() << "\n";
  return 0;
}

// The commands and how to see their flags.
std::string general_usage() {
  std::string out = "usage: kforge-train <command> [flags]\nSFT, GRPO and evaluation without a database\n\ncommands:\n";
  for (const auto& command : train_commands()) out += "  " + command + "\n";
  return out + "\n`kforge-train <command> --help` lists the command's flags and their defaults.\n";
}

}  // namespace

int main(int argc, char** argv) {
  const std::string command = argc > 1 && argv[1][0] != '-' ? argv[1] : "";
  if (!command_kind(command)) {
    bool help = argc > 1 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h");
    if (!command.empty()) std::cerr << "kforge-train: unknown command '" << command << "' (dataset, sft, grpo, rft, eval)\n";
    (help ? std::cout : std::cerr) << general_usage();
    return help ? 0 : 2;
  }
  kforge::Flags flags(command_flags(command));
  if (auto error = flags.parse(argc, argv, 2)) {
    std::cerr << "kforge-train " << command << ": " << *error << "\n";
    return 2;
  }
  if (flags.help_requested()) {
    std::cout << flags.usage("kforge-train " + command, "job fields take their defaults and ranges from spec/job_spec.h");
    return 0;
  }
  if (!flags.positional().empty()) {
    std::cerr << "kforge-train " << command << ": unexpected argument '" << flags.positional()[0] << "'\n";
    return 2;
  }
  kforge::log_set_level(flags.get("log-level"));
  try {
    // Flags that break a field's range fail here, before any model or suite is loaded.
    if (command == "dataset" || command == "sft") sft_args(flags);
    if (command == "grpo") grpo_args(flags);
    if (command == "rft") rft_args(flags);
    if (command == "eval") evaluate_args(flags);
  } catch (const std::invalid_argument& e) {
    std::cerr << "kforge-train " << command << ": " << e.what() << "\n";
    return 2;
  }
  try {
    at::manual_seed(flags.get_int("seed"));
    if (command == "dataset") return dataset_command(flags);
    if (command == "sft") return sft_command(flags);
    if (command == "grpo") return grpo_command(flags);
    if (command == "rft") return rft_command(flags);
    return eval_command(flags);
  } catch (const std::exception& e) {
    std::cerr << "kforge-train " << command << ": " << e.what() << "\n";
    return 1;
  }
}
