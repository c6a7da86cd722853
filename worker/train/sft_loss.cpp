// Completion-only SFT loss; see sft_loss.h.
// Tested by tests/worker/train/sft_loss_test.cpp (ctest -R train_test).
#include "worker/train/sft_loss.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace kforge::train {

at::Tensor completion_nll(const at::Tensor& logprobs, const at::Tensor& mask, double normaliser) {
  if (!logprobs.defined() || !mask.defined() || logprobs.dim() != 2 || logprobs.sizes() != mask.sizes())
    throw std::invalid_argument("completion_nll: need logprobs and mask of the same [B,C] shape (got " +
                                (logprobs.defined() ? c10::str(logprobs.sizes()) : std::string("undefined")) + " and " +
                                (mask.defined() ? c10::str(mask.sizes()) : std::string("undefined")) + ")");
  at::Tensor m = mask.to(logprobs.scalar_type());
  double denom = normaliser > 0 ? normaliser : std::max(1.0, m.sum().item<double>());
  // Padding may hold -inf; a plain multiply would give 0 * -inf = NaN. where() keeps it
  // out of both the sum and the gradient.
  at::Tensor kept = at::where(m > 0, logprobs, at::zeros_like(logprobs));
  return -(kept * m).sum() / denom;
}

}  // namespace kforge::train
