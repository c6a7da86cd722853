// Expert iteration (rejection-sampling fine-tuning, `method: rft`): each round samples n
// completions per train task from the current policy, keeps the ones the trusted checker
// verifies correct, and fine-tunes on every kernel kept so far. The cheap, steady baseline
// GRPO must beat. Tested by tests/worker/train/rl_options_test.cpp (ctest -R train_test) and end
// to end on PoCL by jobs_training_test.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "worker/train/sft_trainer.h"
#include "worker/train/trainable_policy.h"

namespace kforge::train {

//! Settings of an expert-iteration run (train_config.h's rft_config builds it from the job spec).
struct RftConfig {
  int rounds = 2;               //!< sample -> verify -> fine-tune rounds
  int samples_per_task = 8;     //!< completions sampled per task and round
  int max_kept_per_task = 4;    //!< distinct verified kernels kept per task and round
  int check_threads = 4;        //!< checks at once
  uint64_t seed = 0;            //!< sampling seed base (round and task mixed in)
  SamplingConfig sampling;      //!< how completions are sampled
  SftConfig sft;                //!< each round's fine-tune: max_steps is steps per round (out_dir unused)

  //! Empty when valid, else a message naming the bad field.
  std::string validate() const;
};

//! What one round did (a training_metrics row; `step` is the round).
struct RftRoundMetrics {
  int round = 0;                       //!< 1-based
  int total_rounds = 0;                //!< rounds of the run
  int tasks = 0, samples = 0;          //!< tasks sampled, completions checked
  std::array<int, kOutcomeCount> outcomes{};  //!< histogram by Outcome
  double correct_rate = 0;             //!< share of samples verified correct
  double rule_violation_rate = 0;      //!< share of samples that broke a rule
  int tasks_solved = 0;                //!< tasks with at least one correct sample this round
  int kept_new = 0;                    //!< verified kernels added to the pool this round
  int pool_size = 0;                   //!< verified kernels fine-tuned on this round
  int sft_steps = 0;                   //!< optimizer steps of this round's fine-tune (0: nothing to learn from)
  double sft_loss = 0;                 //!< loss of its last step
  double sample_seconds = 0, check_seconds = 0, train_seconds = 0;  //!< time per phase

  //! JSON object text with every field (outcome histogram by name).
  std::string to_json() const;
};

//! Runs expert-iteration rounds on a policy; policy and checker must outlive the trainer.
class RftTrainer {
 public:
  //! Throws std::invalid_argument on an invalid config.
  RftTrainer(TrainablePolicy& policy, Checker& checker, const RftConfig& config);
  ~RftTrainer();

  //! One round on `tasks`: sample, verify, add new verified kernels to the pool, fine-tune
  //! on the whole pool for config.sft.max_steps steps (skipped while the pool is empty).
  RftRoundMetrics round(const std::vector<Task>& tasks);
  //! Rounds done so far.
  int rounds_done() const;
  //! Every verified (prompt, kernel) pair kept so far, in the order found.
  const std::vector<SftExample>& pool() const;
  //! Restores a resumed run's rounds and pool (the round's seeds depend on rounds_done).
  void restore(int rounds_done, std::vector<SftExample> pool);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kforge::train
