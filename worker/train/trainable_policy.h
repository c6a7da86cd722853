// What the trainers need from a policy and from a checker, as two small
// interfaces: the real model (worker/policy) and the harness plug in through
// adapters; tests plug in a tiny bigram policy and a synthetic checker.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "worker/train/reward.h"

namespace kforge::train {

//! Sampling settings used by GRPO and evaluation.
struct SamplingConfig {
  double temperature = 1.0;        //!< softmax temperature (> 0 for training)
  double top_p = 1.0;              //!< nucleus mass (1 disables)
  int64_t top_k = 0;               //!< top-k (0 disables)
  int64_t max_new_tokens = 256;    //!< completion limit
  std::vector<std::string> stop;   //!< stop strings
};

//! One sampled completion.
struct Completion {
  std::vector<int64_t> tokens;   //!< generated ids (including a final stop token, if any)
  std::vector<float> logprobs;   //!< per-token log-probs under the sampling policy
  std::string text;              //!< decoded text handed to the checker
  bool truncated = false;        //!< stopped at max_new_tokens
};

//! Teacher-forced per-token log-probs of completions.
struct ScoredCompletions {
  at::Tensor logprobs;  //!< [B,C] log p(token | prefix), differentiable when grad is on
  at::Tensor mask;      //!< [B,C] 1 for real tokens, 0 for padding
};

//! A policy the trainers can sample from, score and update.
class TrainablePolicy {
 public:
  virtual ~TrainablePolicy() = default;
  //! Token ids of a text (no special handling beyond the tokenizer's).
  virtual std::vector<int64_t> encode(const std::string& text) const = 0;
  //! The token that ends a completion (appended to SFT targets; sampling stops on it); -1 if none.
  virtual int64_t eos_token() const = 0;
  //! `count` samples of `prompt`; same seed and weights give the same samples.
  virtual std::vector<Completion> sample(const std::vector<int64_t>& prompt, int count, const SamplingConfig& config,
                                         uint64_t seed) = 0;
  //! `count` samples of each prompt, prompt i with seeds[i]: what sample() gives for each
  //! (the real model decodes them as one batch, up to floating-point differences).
  virtual std::vector<std::vector<Completion>> sample_many(const std::vector<std::vector<int64_t>>& prompts, int count,
                                                           const SamplingConfig& config,
                                                           const std::vector<uint64_t>& seeds) {
    std::vector<std::vector<Completion>> out;
    for (size_t prompt_idx = 0; prompt_idx < prompts.size(); ++prompt_idx)
      out.push_back(sample(prompts[prompt_idx], count, config, seeds.at(prompt_idx)));
    return out;
  }
  //! Log-probs (at temperature 1) of `completions[b]` after `prompts[b]`, one padded forward.
  virtual ScoredCompletions score(const std::vector<std::vector<int64_t>>& prompts,
                                  const std::vector<std::vector<int64_t>>& completions) = 0;
  //! The trainable weights (shared with the policy: updating them updates the policy).
  virtual std::vector<at::Tensor> parameters() = 0;
  //! Writes a checkpoint directory (HF layout for the real model).
  virtual void save(const std::string& dir) const = 0;
  //! Loads weights written by save into this policy's parameters, in place.
  virtual void load(const std::string& dir) = 0;
};

//! One task of a GRPO step or an evaluation: a prompt and what the checker needs.
struct Task {
  std::string id;      //!< op name
  std::string prompt;  //!< prompt text (template applied)
  std::string spec;    //!< opaque to the trainer: the checker's description of the op (e.g. op JSON)
};

//! Checks a completion for a task. Implementations must be thread-safe: the
//! trainers call check from several threads at once.
class Checker {
 public:
  virtual ~Checker() = default;
  //! Outcome of one completion; never throws for bad completions (they are outcomes).
  virtual CheckSummary check(const Task& task, const std::string& completion) = 0;
  //! The same check with a fresh secret seed (new random inputs the kernel cannot have
  //! seen), uncached: the reward-hacking watch re-checks correct kernels with it. A checker
  //! without secret inputs checks again as check does.
  virtual CheckSummary recheck(const Task& task, const std::string& completion, uint64_t secret_seed) {
    (void)secret_seed;
    return check(task, completion);
  }
};

}  // namespace kforge::train
