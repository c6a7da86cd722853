// Supervised fine-tuning loss: negative log-likelihood of completion tokens only.
// The prompt never enters the loss because the scorer (worker/policy/scoring.h)
// returns log-probs of completion tokens alone. Tested by tests/worker/train/sft_loss_test.cpp.
#pragma once

#include <ATen/core/Tensor.h>

namespace kforge::train {

//! -sum(logprobs * mask) / normaliser, where logprobs and mask are [B,C] completion
//! scores; normaliser <= 0 means the mask's own count (at least 1). Use the step's
//! token count as normaliser when a step is split into micro-batches.
//! Throws std::invalid_argument on mismatched shapes.
at::Tensor completion_nll(const at::Tensor& logprobs, const at::Tensor& mask, double normaliser = 0);

}  // namespace kforge::train
