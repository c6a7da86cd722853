// Teacher-forced log-prob scoring of completions (with gradient): the one place
// where logits are shifted against targets and padding is masked.
// Tests: tests/worker/policy/scoring_test.cpp.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "worker/policy/model.h"

namespace kforge::policy {

//! Per-token log-probs of a batch of completions.
struct CompletionScores {
  at::Tensor logprobs;  //!< [B, C] float32, log p(completion[b][j] | prompt, completion[b][<j]); 0 where masked
  at::Tensor mask;      //!< [B, C] float32, 1 for real completion tokens, 0 for padding
};

//! Log-probs of `completions[b]` after `prompts[b]` under softmax(logits / temperature),
//! in one right-padded forward. Differentiable w.r.t. the model's weights when grad is on.
CompletionScores score_completions(const Model& model, const std::vector<std::vector<int64_t>>& prompts,
                                   const std::vector<std::vector<int64_t>>& completions, double temperature = 1.0);

//! The shift: log p(targets[b, j]) from logits[b, positions[b, j]] where positions
//! index the logits row predicting each target. logits [B, T, V], positions and
//! targets [B, C] int64; returns [B, C] float32.
at::Tensor gather_token_logprobs(const at::Tensor& logits, const at::Tensor& positions, const at::Tensor& targets,
                                 double temperature = 1.0);

}  // namespace kforge::policy
