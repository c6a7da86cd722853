// SFT batch building and completion-only loss; see sft_loss.h.
// Tested by tests/worker/train/sft_loss_test.cpp.
#include "worker/train/sft_loss.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace kforge::train {

SftBatch make_sft_batch(const std::vector<std::vector<int64_t>>& prompts,
                        const std::vector<std::vector<int64_t>>& completions, int64_t pad_id, int64_t max_tokens) {
  if (prompts.size() != completions.size())
    throw std::invalid_argument("make_sft_batch: " + std::to_string(prompts.size()) + " prompts but " +
                                std::to_string(completions.size()) + " completions");
  if (prompts.empty()) throw std::invalid_argument("make_sft_batch: empty batch");
  if (max_tokens < 2) throw std::invalid_argument("make_sft_batch: max_tokens must be >= 2");
  SftBatch batch;
  int64_t longest = 0;
  for (size_t seq_idx = 0; seq_idx < prompts.size(); ++seq_idx) {
    int64_t len = prompts[seq_idx].size() + completions[seq_idx].size();
    if (len > max_tokens) ++batch.truncated;
    longest = std::max(longest, std::min(len, max_tokens));
  }
  int64_t width = std::max<int64_t>(longest - 1, 1);
  int64_t rows = prompts.size();
  batch.input_ids = at::full({rows, width}, pad_id, at::kLong);
  batch.targets = at::full({rows, width}, pad_id, at::kLong);
  batch.loss_mask = at::zeros({rows, width}, at::kFloat);
  auto input = batch.input_ids.accessor<int64_t, 2>();
  auto target = batch.targets.accessor<int64_t, 2>();
  auto mask = batch.loss_mask.accessor<float, 2>();
  for (int64_t seq_idx = 0; seq_idx < rows; ++seq_idx) {
    std::vector<int64_t> seq(prompts[seq_idx]);
    seq.insert(seq.end(), completions[seq_idx].begin(), completions[seq_idx].end());
    if (static_cast<int64_t>(seq.size()) > max_tokens) seq.resize(max_tokens);
    int64_t prompt_len = prompts[seq_idx].size();
    // Position p predicts seq[p+1]; it is a completion token when p+1 >= prompt_len.
    for (int64_t pos = 0; pos + 1 < static_cast<int64_t>(seq.size()); ++pos) {
      input[seq_idx][pos] = seq[pos];
      target[seq_idx][pos] = seq[pos + 1];
      if (pos + 1 >= prompt_len) {
        mask[seq_idx][pos] = 1.0f;
        ++batch.completion_tokens;
      }
    }
  }
  return batch;
}

at::Tensor completion_loss(const at::Tensor& logits, const at::Tensor& targets, const at::Tensor& loss_mask,
                           double normaliser) {
  if (logits.dim() != 3 || targets.dim() != 2 || logits.size(0) != targets.size(0) ||
      logits.size(1) != targets.size(1) || loss_mask.sizes() != targets.sizes())
    throw std::invalid_argument("completion_loss: need logits [B,T,V], targets and loss_mask [B,T] (got " +
                                c10::str(logits.sizes()) + ", " + c10::str(targets.sizes()) + ", " +
                                c10::str(loss_mask.sizes()) + ")");
  at::Tensor logp = at::log_softmax(logits.to(at::kFloat), -1);
  at::Tensor nll = -logp.gather(-1, targets.to(at::kLong).unsqueeze(-1)).squeeze(-1);
  at::Tensor mask = loss_mask.to(at::kFloat);
  double denom = normaliser > 0 ? normaliser : std::max(1.0, mask.sum().item<double>());
  return (nll * mask).sum() / denom;
}

}  // namespace kforge::train
