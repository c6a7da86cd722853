// GRPO pieces (DAPO-style): per-group advantages with zero-variance groups
// dropped, soft overlong penalty, and the clipped token-level policy loss with
// optional k3 KL to a frozen reference. Tested by tests/worker/train/grpo_test.cpp.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kforge::train {

//! Advantages of one step's samples, laid out group after group.
struct GroupAdvantages {
  std::vector<double> advantages;  //!< one per sample; 0 for samples of dropped groups
  std::vector<bool> keep;          //!< false for samples of dropped (zero-variance) groups
  int groups_kept = 0;             //!< groups whose rewards differ
  int groups_dropped = 0;          //!< groups whose rewards are all equal: no learning signal
};

//! The baseline an advantage subtracts.
enum class Baseline {
  group_mean,     //!< r_i - mean(group): GRPO
  leave_one_out,  //!< r_i - mean of the other G-1 rewards = G/(G-1) (r_i - mean): RLOO, unbiased
};

//! Advantages per group of `group_size` consecutive rewards against `baseline`, divided by
//! (population std + std_eps) when scale_by_std. A group whose reward spread is at most
//! zero_variance_tol is dropped. Throws std::invalid_argument when rewards.size() is not a
//! multiple of group_size or group_size < 1 (or < 2 for leave_one_out).
GroupAdvantages group_advantages(const std::vector<double>& rewards, int group_size, bool scale_by_std,
                                 double std_eps = 1e-6, double zero_variance_tol = 1e-9,
                                 Baseline baseline = Baseline::group_mean);

//! DAPO soft overlong penalty: 0 up to max_tokens - buffer_tokens, then linear down to
//! -factor at max_tokens, -factor beyond (and for truncated completions when the caller says so).
double overlong_penalty(int completion_tokens, int max_tokens, int buffer_tokens, double factor = 1.0);

//! Loss settings of one GRPO update.
struct GrpoLossConfig {
  double eps_low = 0.2;           //!< ratio clipped below at 1 - eps_low
  double eps_high = 0.28;         //!< ratio clipped above at 1 + eps_high (clip-higher)
  double kl_beta = 0.0;           //!< weight of the k3 KL to the reference; 0 disables it
  double log_ratio_clamp = 20.0;  //!< |log ratio| clamped before exp, so one token cannot overflow

  //! Empty when valid, else a message naming the bad field.
  std::string validate() const;
};

//! Tensors of one (micro-)batch; B sequences of T completion positions.
struct GrpoLossInputs {
  at::Tensor logp;        //!< [B,T] log-probs of the sampled tokens under the current policy (with grad)
  at::Tensor old_logp;    //!< [B,T] the same under the sampling policy (no grad)
  at::Tensor ref_logp;    //!< [B,T] under the frozen reference; undefined when kl_beta == 0
  at::Tensor advantages;  //!< [B] per-sequence advantage
  at::Tensor mask;        //!< [B,T] 1 for completion tokens that count, 0 for padding / dropped groups
  at::Tensor entropy;     //!< [B,T] per-token entropy for the metric; may be undefined
  //! Active tokens of the whole step (all micro-batches); <= 0 means this batch's own count.
  int64_t step_active_tokens = 0;
};

//! Loss and metrics of one (micro-)batch. Metrics are means over its active tokens.
struct GrpoLossResult {
  at::Tensor loss;              //!< scalar: sum of per-token losses / step active tokens
  int64_t active_tokens = 0;    //!< tokens of this batch with mask 1
  double clip_fraction = 0.0;   //!< share of active tokens where the clipped term was taken
  double clip_low_fraction = 0.0;   //!< share clipped at 1 - eps_low (A < 0)
  double clip_high_fraction = 0.0;  //!< share clipped at 1 + eps_high (A > 0)
  double ratio_mean = 0.0;      //!< mean importance ratio
  double kl = 0.0;              //!< mean k3 KL to the reference (0 without one)
  double entropy = 0.0;         //!< mean entropy (0 when none given)
  double policy_loss = 0.0;     //!< mean clipped surrogate loss (without the KL term)
};

//! Token-level clipped surrogate: loss_t = -min(r_t A, clip(r_t, 1-eps_low, 1+eps_high) A)
//! + beta * k3_t, summed over active tokens and divided by the step's active tokens.
//! Throws std::invalid_argument on mismatched shapes or an invalid config.
GrpoLossResult grpo_loss(const GrpoLossInputs& inputs, const GrpoLossConfig& config);

//! Per-token log-prob of `tokens` [B,T] under `logits` [B,T,V] (log_softmax + gather).
at::Tensor gather_token_logprobs(const at::Tensor& logits, const at::Tensor& tokens);

//! Per-token entropy [B,T] of the distributions in `logits` [B,T,V] (no grad).
at::Tensor token_entropy(const at::Tensor& logits);

}  // namespace kforge::train
