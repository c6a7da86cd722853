// Spec -> trainer configs behind worker/train/train_config.h. Every field a table
// defines is assigned here; the configs' own member defaults are for hand-built runs
// (tests). Test: ctest -R spec_agreement_test.
#include "worker/train/train_config.h"

#include <algorithm>

namespace kforge::train {
namespace {

SamplingConfig sampling_config(double temperature, double top_p, int max_new_tokens, PromptStyle style) {
  SamplingConfig sampling;
  sampling.temperature = temperature;
  sampling.top_p = top_p;
  sampling.max_new_tokens = max_new_tokens;
  sampling.stop = prompt_stop_strings(style);
  return sampling;
}

}  // namespace

harness::CheckOptions check_options(const spec::CheckSettings& check, double time_budget_s) {
  harness::CheckOptions options;
  options.trials = check.trials;
  options.time = check.time_kernels;
  options.time_budget_s = time_budget_s;
  // Every child of a training check is on the critical path (many checks at once, a new op's
  // Checker per check): a warm-up build would be a second full PoCL compile in each jailed child.
  options.warm_up = false;
  return options;
}

DatasetOptions dataset_options(const spec::SftArgs& args, PromptStyle style, double time_budget_s) {
  DatasetOptions options;
  options.max_variants_per_op = args.variants_per_op;
  options.style = style;
  options.check = check_options(args.check, time_budget_s);
  options.max_check_elements = args.check.max_check_elements;
  return options;
}

SftConfig sft_config(const spec::SftArgs& args) {
  SftConfig config;
  config.epochs = args.epochs;
  config.max_steps = args.max_steps;
  config.batch_size = args.batch_size;
  config.micro_batch = std::min(args.micro_batch, args.batch_size);
  config.max_tokens = args.max_seq_len;
  config.eval_every = args.eval_every;
  config.checkpoint_every = args.checkpoint_every;
  config.keep_checkpoints = 2;
  config.seed = args.seed;
  config.optim.lr = args.learning_rate;
  config.optim.warmup_steps = args.warmup_steps;
  config.optim.weight_decay = args.weight_decay;
  config.optim.grad_clip = args.grad_clip;
  return config;
}

GrpoConfig grpo_config(const spec::GrpoArgs& args, PromptStyle style) {
  GrpoConfig config;
  config.group_size = args.group_size;
  config.tasks_per_step = args.prompts_per_step;
  config.steps = args.steps;
  config.micro_batch = args.micro_batch;
  config.check_threads = args.check.threads;
  config.overlong_buffer_tokens = args.overlong_buffer;
  config.seed = args.seed;
  config.sampling = sampling_config(args.temperature, args.top_p, args.max_new_tokens, style);
  config.reward.speed_weight = args.speed_weight;
  config.reward.speed_cap = args.speed_cap;
  config.speed_bonus = args.speed_bonus == "among_correct" ? SpeedBonus::among_correct : SpeedBonus::absolute;
  config.baseline = args.advantage == "leave_one_out" ? Baseline::leave_one_out : Baseline::group_mean;
  config.recheck_per_step = args.recheck_per_step;
  config.loss.eps_low = args.eps_low;
  config.loss.eps_high = args.eps_high;
  config.loss.kl_beta = args.kl_coef;
  config.optim.lr = args.learning_rate;
  config.optim.warmup_steps = args.warmup_steps;
  config.optim.total_steps = args.steps;
  config.optim.weight_decay = 0.0;
  config.optim.grad_clip = args.grad_clip;
  return config;
}

RftConfig rft_config(const spec::RftArgs& args, PromptStyle style) {
  RftConfig config;
  config.rounds = args.rounds;
  config.samples_per_task = args.samples_per_task;
  config.max_kept_per_task = args.max_kept_per_task;
  config.check_threads = args.check.threads;
  config.seed = args.seed;
  config.sampling = sampling_config(args.temperature, args.top_p, args.max_new_tokens, style);
  config.sft.max_steps = args.steps_per_round;
  config.sft.batch_size = args.batch_size;
  config.sft.micro_batch = std::min(args.micro_batch, args.batch_size);
  config.sft.max_tokens = args.max_seq_len;
  config.sft.eval_every = 0;
  config.sft.seed = args.seed;
  config.sft.optim.lr = args.learning_rate;
  config.sft.optim.warmup_steps = std::min(args.warmup_steps, args.steps_per_round);
  config.sft.optim.weight_decay = 0.0;
  config.sft.optim.grad_clip = args.grad_clip;
  return config;
}

EvalConfig eval_config(const spec::EvaluateArgs& args, PromptStyle style) {
  EvalConfig config;
  config.samples_per_op = args.samples;
  config.k = args.k;
  config.check_threads = args.check.threads;
  config.seed = args.seed;
  config.sampling = sampling_config(args.temperature, args.top_p, args.max_new_tokens, style);
  return config;
}

}  // namespace kforge::train
