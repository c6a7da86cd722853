// The GRPO loop; see grpo_trainer.h. Sample -> check (parallel) -> reward ->
// advantages -> recompute old log-probs -> clipped update over micro-batches.
// Tested by tests/worker/train/grpo_trainer_test.cpp (tiny policy, synthetic checker).
#include "worker/train/grpo_trainer.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <random>
#include <cmath>
#include <stdexcept>
#include <thread>

#include "common/elapsed.h"
#include "common/log.h"

namespace kforge::train {

namespace {

// Pads per-sample float vectors into [B,C].
at::Tensor pad_rows(const std::vector<const std::vector<float>*>& rows, int64_t width) {
  at::Tensor out = at::zeros({static_cast<int64_t>(rows.size()), width}, at::kFloat);
  auto acc = out.accessor<float, 2>();
  for (size_t row_idx = 0; row_idx < rows.size(); ++row_idx)
    for (size_t pos = 0; pos < rows[row_idx]->size() && static_cast<int64_t>(pos) < width; ++pos)
      acc[row_idx][pos] = (*rows[row_idx])[pos];
  return out;
}

}  // namespace

std::string GrpoConfig::validate() const {
  if (group_size < 2) return "grpo.group_size must be >= 2 (advantages compare samples within a group)";
  if (tasks_per_step < 1) return "grpo.tasks_per_step must be >= 1";
  if (steps < 1) return "grpo.steps must be >= 1";
  if (update_epochs < 1) return "grpo.update_epochs must be >= 1";
  if (recheck_per_step < 0) return "grpo.recheck_per_step must be >= 0";
  if (micro_batch < 1) return "grpo.micro_batch must be >= 1";
  if (check_threads < 1) return "grpo.check_threads must be >= 1";
  if (overlong_buffer_tokens < 0) return "grpo.overlong_buffer_tokens must be >= 0";
  if (overlong_buffer_tokens > sampling.max_new_tokens) return "grpo.overlong_buffer_tokens must be <= max_new_tokens";
  if (!(sampling.temperature > 0)) return "grpo.sampling.temperature must be > 0";
  if (sampling.max_new_tokens < 1) return "grpo.sampling.max_new_tokens must be >= 1";
  if (auto e = reward.validate(); !e.empty()) return e;
  if (auto e = loss.validate(); !e.empty()) return e;
  return optim.validate();
}

std::string GrpoStepMetrics::to_json() const {
  nlohmann::json outcome_counts = nlohmann::json::object();
  for (int outcome_idx = 0; outcome_idx < kOutcomeCount; ++outcome_idx)
    outcome_counts[outcome_name(static_cast<Outcome>(outcome_idx))] = outcomes[outcome_idx];
  nlohmann::json j = {
      {"step", step},
      {"samples", samples},
      {"reward_mean", reward_mean},
      {"reward_max", reward_max},
      {"outcomes", outcome_counts},
      {"correct_rate", correct_rate},
      {"mean_speedup_correct", mean_speedup_correct},
      {"rule_violation_rate", rule_violation_rate},
      {"hacking_rate", hacking_rate},
      {"suspicious_rate", suspicious_rate},
      {"rules_caught", rules_caught},
      {"rechecked", rechecked},
      {"recheck_failed", recheck_failed},
      {"recheck_fail_rate", recheck_fail_rate},
      {"groups_kept", groups_kept},
      {"groups_dropped", groups_dropped},
      {"tokens", tokens},
      {"active_tokens", active_tokens},
      {"truncated_rate", truncated_rate},
      {"loss", loss},
      {"kl", kl},
      {"entropy", entropy},
      {"clip_fraction", clip_fraction},
      {"ratio_mean", ratio_mean},
      {"grad_norm", grad_norm},
      {"lr", lr},
      {"seconds", {{"sample", sample_seconds}, {"check", check_seconds}, {"update", update_seconds}}},
  };
  if (curriculum_tasks >= 0) j["curriculum"] = {{"tasks", curriculum_tasks}, {"mean_pass1", curriculum_mean_pass1}};
  return j.dump();
}

std::vector<std::string> TaskSamples::texts() const {
  std::vector<std::string> out;
  for (const auto& completion : completions) out.push_back(completion.text);
  return out;
}

TaskSamples sample_each_task(TrainablePolicy& policy, const std::vector<Task>& tasks, int count,
                         const SamplingConfig& sampling, uint64_t base_seed) {
  TaskSamples out;
  std::vector<uint64_t> seeds;
  for (size_t task_idx = 0; task_idx < tasks.size(); ++task_idx) {
    out.prompts.push_back(policy.encode(tasks[task_idx].prompt));
    seeds.push_back(base_seed + 7919ull * task_idx);
  }
  auto started = std::chrono::steady_clock::now();
  auto groups = policy.sample_many(out.prompts, count, sampling, seeds);
  // What a slow sampling phase is made of (2026-11-28: a curriculum refresh on the H200 ran
  // 8 minutes with nothing logged): how many completions, how long, how many hit the limit.
  size_t tokens = 0, truncated = 0, samples = 0;
  for (const auto& group : groups)
    for (const auto& completion : group) {
      tokens += completion.tokens.size();
      truncated += completion.truncated ? 1 : 0;
      ++samples;
    }
  log_info("policy", "sampled",
           {{"tasks", std::to_string(tasks.size())},
            {"samples", std::to_string(samples)},
            {"mean_tokens", std::to_string(samples ? tokens / samples : 0)},
            {"truncated", std::to_string(truncated)},
            {"seconds", std::to_string(seconds_since(started))}});
  for (size_t task_idx = 0; task_idx < tasks.size(); ++task_idx) {
    if (static_cast<int>(groups[task_idx].size()) != count)
      throw std::runtime_error("policy returned " + std::to_string(groups[task_idx].size()) + " samples, asked for " +
                               std::to_string(count));
    for (auto& completion : groups[task_idx]) {
      out.tasks.push_back(&tasks[task_idx]);
      out.completions.push_back(std::move(completion));
    }
  }
  return out;
}

std::vector<CheckSummary> check_parallel(Checker& checker, const std::vector<const Task*>& tasks,
                                         const std::vector<std::string>& completions, int threads,
                                         const std::vector<uint64_t>& secret_seeds) {
  if (tasks.size() != completions.size()) throw std::invalid_argument("check_parallel: tasks and completions differ");
  if (!secret_seeds.empty() && secret_seeds.size() != completions.size())
    throw std::invalid_argument("check_parallel: one secret seed per completion");
  std::vector<CheckSummary> results(completions.size());
  std::atomic<size_t> next{0};
  std::mutex errors_mutex;
  size_t failed = 0;
  std::string first_error;
  auto work = [&] {
    for (size_t sample_idx = next++; sample_idx < completions.size(); sample_idx = next++) {
      try {
        results[sample_idx] = secret_seeds.empty()
                                  ? checker.check(*tasks[sample_idx], completions[sample_idx])
                                  : checker.recheck(*tasks[sample_idx], completions[sample_idx], secret_seeds[sample_idx]);
      } catch (const std::exception& e) {
        // The checker throws when the check itself cannot run (the op is broken, no device):
        // not the completion's fault. The sample gets nothing and says why.
        results[sample_idx] = CheckSummary{Outcome::format_error};
        results[sample_idx].message = std::string("the check could not run: ") + e.what();
        std::lock_guard<std::mutex> lock(errors_mutex);
        if (failed++ == 0) first_error = e.what();
      }
    }
  };
  int worker_count = std::max(1, std::min<int>(threads, completions.size()));
  std::vector<std::thread> pool;
  for (int thread_idx = 1; thread_idx < worker_count; ++thread_idx) pool.emplace_back(work);
  work();
  for (auto& thread : pool) thread.join();
  // No check ran at all: the harness is broken on this host (2026-11-28: a sandbox with no
  // OpenCL device scored every sample as a format error). Scores of nothing are no scores.
  if (failed > 0 && failed == completions.size())
    throw std::runtime_error("none of " + std::to_string(failed) + " checks could run: " + first_error);
  if (failed > 0)
    log_warn("train", "checks that could not run",
              {{"failed", std::to_string(failed)}, {"of", std::to_string(completions.size())}, {"first", first_error}});
  return results;
}

struct GrpoTrainer::Impl {
  TrainablePolicy& policy;
  TrainablePolicy* reference;
  Checker& checker;
  GrpoConfig config;
  std::unique_ptr<Optimizer> optimizer;
  int steps_done = 0;
};

GrpoTrainer::GrpoTrainer(TrainablePolicy& policy, TrainablePolicy* reference, Checker& checker,
                         const GrpoConfig& config) {
  if (auto error = config.validate(); !error.empty()) throw std::invalid_argument(error);
  if (config.loss.kl_beta > 0 && reference == nullptr)
    throw std::invalid_argument("grpo.loss.kl_beta > 0 needs a reference policy");
  OptimConfig optim = config.optim;
  // Micro-batch losses are already divided by the step's active tokens, so their
  // gradients add up to the step's: one optimizer step per update epoch.
  optim.accumulation = 1;
  impl_.reset(new Impl{policy, reference, checker, config, nullptr, 0});
  impl_->optimizer = std::make_unique<Optimizer>(policy.parameters(), optim);
}

GrpoTrainer::~GrpoTrainer() = default;

int GrpoTrainer::steps_done() const { return impl_->steps_done; }

Optimizer& GrpoTrainer::optimizer() { return *impl_->optimizer; }

GrpoStepMetrics GrpoTrainer::step(const std::vector<Task>& tasks) {
  const GrpoConfig& config = impl_->config;
  const int group = config.group_size;
  GrpoStepMetrics metrics;
  metrics.step = ++impl_->steps_done;

  // 1. Sample G completions per task from the current weights.
  auto phase_start = std::chrono::steady_clock::now();
  TaskSamples sampled =
      sample_each_task(impl_->policy, tasks, group, config.sampling, config.seed + 1000003ull * metrics.step);
  std::vector<Completion>& completions = sampled.completions;
  const std::vector<const Task*>& sample_tasks = sampled.tasks;
  std::vector<std::vector<int64_t>> prompts;  // per sample, for scoring
  for (size_t sample_idx = 0; sample_idx < completions.size(); ++sample_idx)
    prompts.push_back(sampled.prompts[sample_idx / group]);
  metrics.samples = completions.size();
  metrics.sample_seconds = seconds_since(phase_start);

  // 2. Check every sample, several sandboxes at once.
  phase_start = std::chrono::steady_clock::now();
  std::vector<std::string> texts = sampled.texts();
  std::vector<CheckSummary> checks = check_parallel(impl_->checker, sample_tasks, texts, config.check_threads);
  metrics.check_seconds = seconds_since(phase_start);

  // 3. Rewards (+ overlong penalty) and the reward-hacking watch.
  std::vector<double> rewards = group_rewards(checks, group, config.reward, config.speed_bonus);
  int correct = 0, trusted_correct = 0, violations = 0, hacked = 0, suspicious = 0, truncated = 0;
  double speedup_sum = 0;
  for (size_t sample_idx = 0; sample_idx < checks.size(); ++sample_idx) {
    const CheckSummary& check = checks[sample_idx];
    const Completion& completion = completions[sample_idx];
    double& reward = rewards[sample_idx];
    if (config.overlong_buffer_tokens > 0) {
      int length = completion.truncated ? static_cast<int>(config.sampling.max_new_tokens)
                                        : static_cast<int>(completion.tokens.size());
      reward += overlong_penalty(length, config.sampling.max_new_tokens, config.overlong_buffer_tokens,
                                 config.overlong_factor);
    }
    metrics.outcomes[static_cast<int>(check.outcome)]++;
    metrics.tokens += completion.tokens.size();
    truncated += completion.truncated ? 1 : 0;
    if (check.outcome == Outcome::rule_violation) {
      ++violations;
      hacked += check.output_matched ? 1 : 0;
    }
    if (check.outcome == Outcome::correct) {
      ++correct;
      if (check.suspicious) {
        ++suspicious;
      } else if (std::isfinite(check.speedup) && check.speedup > 0) {
        ++trusted_correct;
        speedup_sum += check.speedup;
      }
    }
  }
  double n = std::max<size_t>(1, checks.size());
  for (double reward : rewards) metrics.reward_mean += reward / n;
  metrics.reward_max = rewards.empty() ? 0 : *std::max_element(rewards.begin(), rewards.end());
  metrics.correct_rate = correct / n;
  metrics.mean_speedup_correct = trusted_correct ? speedup_sum / trusted_correct : 0;
  metrics.rule_violation_rate = violations / n;
  metrics.hacking_rate = (hacked + correct) ? static_cast<double>(hacked) / (hacked + correct) : 0;
  metrics.suspicious_rate = correct ? static_cast<double>(suspicious) / correct : 0;
  metrics.truncated_rate = truncated / n;
  metrics.rules_caught = violations;

  // 3b. The hacking watch: a few correct kernels (spread over the step) re-checked on fresh
  //     secret inputs; one that fails was correct only on what it was checked with.
  if (config.recheck_per_step > 0 && correct > 0) {
    auto recheck_start = std::chrono::steady_clock::now();
    std::vector<size_t> correct_idx;
    for (size_t sample_idx = 0; sample_idx < checks.size(); ++sample_idx)
      if (checks[sample_idx].outcome == Outcome::correct) correct_idx.push_back(sample_idx);
    size_t picks = std::min<size_t>(config.recheck_per_step, correct_idx.size());
    std::vector<const Task*> recheck_tasks;
    std::vector<std::string> recheck_texts;
    std::vector<uint64_t> seeds;
    std::random_device entropy;  // secret: neither the run's seed nor anything the policy saw
    for (size_t pick = 0; pick < picks; ++pick) {
      size_t sample_idx = correct_idx[pick * correct_idx.size() / picks];
      recheck_tasks.push_back(sample_tasks[sample_idx]);
      recheck_texts.push_back(texts[sample_idx]);
      seeds.push_back((static_cast<uint64_t>(entropy()) << 32) | entropy());
    }
    auto rechecks = check_parallel(impl_->checker, recheck_tasks, recheck_texts, config.check_threads, seeds);
    metrics.rechecked = rechecks.size();
    for (const auto& recheck : rechecks) metrics.recheck_failed += recheck.outcome != Outcome::correct ? 1 : 0;
    metrics.recheck_fail_rate = static_cast<double>(metrics.recheck_failed) / metrics.rechecked;
    metrics.check_seconds += seconds_since(recheck_start);  // re-checks are checking time too
  }

  // 4. Group advantages; zero-variance groups carry no signal and are dropped.
  GroupAdvantages advantages =
      group_advantages(rewards, group, config.scale_advantages_by_std, 1e-6, 1e-9, config.baseline);
  metrics.groups_kept = advantages.groups_kept;
  metrics.groups_dropped = advantages.groups_dropped;
  std::vector<size_t> kept;
  for (size_t sample_idx = 0; sample_idx < completions.size(); ++sample_idx)
    if (advantages.keep[sample_idx] && !completions[sample_idx].tokens.empty()) kept.push_back(sample_idx);
  for (size_t sample_idx : kept) metrics.active_tokens += completions[sample_idx].tokens.size();

  // 5. Update: old log-probs recomputed by the same scorer (sampler numerics can differ
  //    slightly), reference log-probs for KL, then the clipped loss per micro-batch.
  phase_start = std::chrono::steady_clock::now();
  metrics.lr = lr_at(config.optim, impl_->optimizer->step());
  if (!kept.empty()) {
    struct MicroBatch {
      std::vector<std::vector<int64_t>> prompts, completions;
      at::Tensor advantages, old_logp, ref_logp, mask;
    };
    std::vector<MicroBatch> batches;
    for (size_t first = 0; first < kept.size(); first += config.micro_batch) {
      MicroBatch batch;
      std::vector<float> adv;
      for (size_t idx = first; idx < std::min(kept.size(), first + config.micro_batch); ++idx) {
        batch.prompts.push_back(prompts[kept[idx]]);
        batch.completions.push_back(completions[kept[idx]].tokens);
        adv.push_back(static_cast<float>(advantages.advantages[kept[idx]]));
      }
      c10::NoGradGuard no_grad;
      ScoredCompletions old_scores = impl_->policy.score(batch.prompts, batch.completions);
      // Everything stays on the policy's device; only metrics come back to the host.
      batch.old_logp = old_scores.logprobs.detach().to(at::kFloat);
      batch.mask = old_scores.mask.detach().to(at::kFloat);
      batch.advantages = at::tensor(adv, at::kFloat).to(batch.old_logp.device());
      if (config.loss.kl_beta > 0)
        batch.ref_logp = impl_->reference->score(batch.prompts, batch.completions)
                             .logprobs.detach()
                             .to(batch.old_logp.device(), at::kFloat);
      batches.push_back(std::move(batch));
    }
    int64_t step_tokens = 0;
    for (const auto& batch : batches) step_tokens += batch.mask.sum().item<int64_t>();
    metrics.active_tokens = step_tokens;
    double loss_sum = 0, kl_sum = 0, entropy_sum = 0, clip_sum = 0, ratio_sum = 0;
    for (int epoch = 0; epoch < config.update_epochs; ++epoch) {
      for (auto& batch : batches) {
        ScoredCompletions scores = impl_->policy.score(batch.prompts, batch.completions);
        GrpoLossInputs in;
        in.logp = scores.logprobs.to(at::kFloat);
        in.old_logp = batch.old_logp;
        in.ref_logp = batch.ref_logp;
        in.advantages = batch.advantages;
        in.mask = batch.mask;
        // -log p of the sampled token estimates the entropy of the policy it came from.
        in.entropy = -batch.old_logp;
        in.step_active_tokens = step_tokens;
        GrpoLossResult out = grpo_loss(in, config.loss);
        out.loss.backward();
        if (epoch == config.update_epochs - 1) {
          double weight = static_cast<double>(out.active_tokens);
          loss_sum += out.policy_loss * weight;
          kl_sum += out.kl * weight;
          entropy_sum += out.entropy * weight;
          clip_sum += out.clip_fraction * weight;
          ratio_sum += out.ratio_mean * weight;
        }
      }
      auto info = impl_->optimizer->micro_step();
      if (info) {
        metrics.grad_norm = info->grad_norm;
        metrics.lr = info->lr;
      }
    }
    double tokens = std::max<int64_t>(1, step_tokens);
    metrics.loss = loss_sum / tokens;
    metrics.kl = kl_sum / tokens;
    metrics.entropy = entropy_sum / tokens;
    metrics.clip_fraction = clip_sum / tokens;
    metrics.ratio_mean = ratio_sum / tokens;
  }
  metrics.update_seconds = seconds_since(phase_start);
  return metrics;
}

}  // namespace kforge::train
