// Supervised fine-tuning loss: next-token cross-entropy on completion tokens only
// (prompt and padding positions are masked out). Tested by tests/worker/train/sft_loss_test.cpp.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace kforge::train {

//! One padded batch of prompt + completion sequences, shifted for next-token prediction.
struct SftBatch {
  at::Tensor input_ids;  //!< [B,T] int64: tokens 0..L-2 of each sequence, right-padded
  at::Tensor targets;    //!< [B,T] int64: tokens 1..L-1 (the token to predict), pad elsewhere
  at::Tensor loss_mask;  //!< [B,T] float: 1 where the target is a completion token
  int64_t completion_tokens = 0;  //!< sum of loss_mask
  int truncated = 0;              //!< sequences cut at max_tokens
};

//! Builds a batch from token ids: sequence = prompt ++ completion, cut to max_tokens.
//! Throws std::invalid_argument on size mismatch, an empty batch, or max_tokens < 2.
SftBatch make_sft_batch(const std::vector<std::vector<int64_t>>& prompts,
                        const std::vector<std::vector<int64_t>>& completions, int64_t pad_id, int64_t max_tokens);

//! Sum of token cross-entropies where loss_mask is 1, divided by `normaliser`
//! (<= 0: the batch's own mask count, at least 1). logits [B,T,V], targets [B,T].
at::Tensor completion_loss(const at::Tensor& logits, const at::Tensor& targets, const at::Tensor& loss_mask,
                           double normaliser = 0);

}  // namespace kforge::train
