// The GRPO loop: each step samples G completions per task from the current policy,
// checks them in parallel, turns outcomes into rewards and group advantages, and
// updates the policy with the clipped token-level loss. Tested by grpo_trainer_test.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "worker/train/grpo.h"
#include "worker/train/optim.h"
#include "worker/train/reward.h"
#include "worker/train/trainable_policy.h"

namespace kforge::train {

//! Settings of a GRPO run. Jobs and kforge-train build it from the job spec with
//! train_config.h's grpo_config; the member defaults serve hand-built runs (tests).
struct GrpoConfig {
  int group_size = 8;              //!< G samples per task
  int tasks_per_step = 4;          //!< tasks in one step's batch
  int steps = 50;                  //!< optimizer steps of the run
  int update_epochs = 1;           //!< passes over one step's samples (1 = strictly on-policy)
  int micro_batch = 16;            //!< sequences per forward/backward
  int check_threads = 4;           //!< checks run at once (each in its own sandbox)
  bool scale_advantages_by_std = true;  //!< GRPO std scaling (false: Dr. GRPO)
  Baseline baseline = Baseline::group_mean;  //!< group mean (GRPO) or leave-one-out (RLOO)
  SpeedBonus speed_bonus = SpeedBonus::absolute;  //!< speed bonus for every correct sample, or ranked among them
  int recheck_per_step = 0;        //!< correct kernels re-checked with a fresh secret seed each step (hacking watch)
  int overlong_buffer_tokens = 0;  //!< soft overlong penalty window (0 disables the penalty)
  double overlong_factor = 1.0;    //!< penalty at max_new_tokens
  uint64_t seed = 0;               //!< sampling seed base (step and task mixed in)
  SamplingConfig sampling;         //!< how completions are sampled
  RewardConfig reward;             //!< outcome -> reward
  GrpoLossConfig loss;             //!< clipping, KL, clamp
  OptimConfig optim;               //!< AdamW and schedule (accumulation is set by the trainer)

  //! Empty when valid, else a message naming the bad field.
  std::string validate() const;
};

//! Metrics of one GRPO step (stored per step in training_metrics).
struct GrpoStepMetrics {
  int step = 0;                       //!< 1-based optimizer step
  int samples = 0;                    //!< tasks * G
  double reward_mean = 0, reward_max = 0;  //!< over all samples, penalty included
  std::array<int, kOutcomeCount> outcomes{};  //!< histogram by Outcome
  double correct_rate = 0;            //!< share of samples that are correct
  double mean_speedup_correct = 0;    //!< mean speedup of correct, non-suspicious samples (0 if none)
  double rule_violation_rate = 0;     //!< share of samples that broke a rule
  double hacking_rate = 0;            //!< rule violations with matching output / (those + correct samples)
  double suspicious_rate = 0;         //!< share of correct samples whose speedup is flagged
  int rules_caught = 0;               //!< samples the static and adversarial rules refused (rule_violation)
  int rechecked = 0, recheck_failed = 0;  //!< correct kernels re-checked with fresh secret seeds / not correct then
  double recheck_fail_rate = 0;       //!< recheck_failed / rechecked (0 when none): correct only on the seen inputs
  int groups_kept = 0, groups_dropped = 0;  //!< zero-variance groups are dropped
  int64_t tokens = 0;                 //!< completion tokens sampled
  int64_t active_tokens = 0;          //!< tokens that entered the loss
  double truncated_rate = 0;          //!< share of samples cut at max_new_tokens
  double loss = 0, kl = 0, entropy = 0, clip_fraction = 0, ratio_mean = 0;  //!< loss metrics (token means)
  double grad_norm = 0, lr = 0;       //!< optimizer step
  double sample_seconds = 0, check_seconds = 0, update_seconds = 0;  //!< time per phase
  int curriculum_tasks = -1;          //!< tasks in the rotation the batch came from (-1: no curriculum; set by the loop)
  double curriculum_mean_pass1 = -1;  //!< mean pass@1 at the last curriculum refresh (-1: none)

  //! JSON object text with every field (outcome histogram by name).
  std::string to_json() const;
};

//! Runs GRPO steps on a policy; the reference (frozen, may be null when kl_beta == 0)
//! gives the KL anchor. Policy, reference and checker must outlive the trainer.
class GrpoTrainer {
 public:
  //! Throws std::invalid_argument on an invalid config or a missing reference with kl_beta > 0.
  GrpoTrainer(TrainablePolicy& policy, TrainablePolicy* reference, Checker& checker, const GrpoConfig& config);
  ~GrpoTrainer();

  //! One step on `tasks` (usually config.tasks_per_step of them): sample, check, update.
  GrpoStepMetrics step(const std::vector<Task>& tasks);
  //! Optimizer steps taken so far.
  int steps_done() const;
  //! The optimizer (to save or load its state with a checkpoint).
  Optimizer& optimizer();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

//! `count` samples of every task's prompt, flat and task by task: sample s is of tasks[s / count].
struct TaskSamples {
  std::vector<std::vector<int64_t>> prompts;  //!< per task: its encoded prompt
  std::vector<const Task*> tasks;             //!< per sample: its task (what check_parallel takes)
  std::vector<Completion> completions;        //!< per sample
  std::vector<std::string> texts() const;     //!< per sample: the completion's text
};

//! Samples `count` completions of each task's prompt, every task decoded together
//! (TrainablePolicy::sample_many), task i with seed base_seed + 7919 * i. Throws when the
//! policy returns another count.
TaskSamples sample_each_task(TrainablePolicy& policy, const std::vector<Task>& tasks, int count,
                         const SamplingConfig& sampling, uint64_t base_seed);

//! Checks every (task, completion) pair with up to `threads` checks at once; results in input order.
//! `secret_seeds`, when given (one per pair), re-checks with those seeds (Checker::recheck).
std::vector<CheckSummary> check_parallel(Checker& checker, const std::vector<const Task*>& tasks,
                                         const std::vector<std::string>& completions, int threads,
                                         const std::vector<uint64_t>& secret_seeds = {});

}  // namespace kforge::train
