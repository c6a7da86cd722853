// Scoring: prompt + completion rows are right-padded (a causal model never looks
// right, so padding needs no attention mask), run once, and each completion token
// j of row b is read from the logits at position len(prompt_b) + j - 1.
#include "worker/policy/scoring.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <stdexcept>

namespace kforge::policy {

at::Tensor gather_token_logprobs(const at::Tensor& logits, const at::Tensor& positions, const at::Tensor& targets,
                                 double temperature) {
  int64_t vocab = logits.size(-1);
  at::Tensor index = positions.unsqueeze(-1).expand({positions.size(0), positions.size(1), vocab});
  at::Tensor selected = logits.gather(1, index).to(at::kFloat) / temperature;  // [B, C, V]
  at::Tensor logp = at::log_softmax(selected, -1);
  return logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1);
}

CompletionScores score_completions(const Model& model, const std::vector<std::vector<int64_t>>& prompts,
                                   const std::vector<std::vector<int64_t>>& completions, double temperature) {
  if (prompts.size() != completions.size()) throw std::invalid_argument("score_completions: prompts and completions differ in count");
  if (prompts.empty()) throw std::invalid_argument("score_completions: empty batch");
  if (temperature <= 0) throw std::invalid_argument("score_completions: temperature must be > 0");
  const int64_t batch = static_cast<int64_t>(prompts.size());
  int64_t total_len = 0, completion_len = 0;
  for (int64_t row_idx = 0; row_idx < batch; ++row_idx) {
    if (prompts[row_idx].empty()) throw std::invalid_argument("score_completions: prompt " + std::to_string(row_idx) + " is empty");
    total_len = std::max<int64_t>(total_len, prompts[row_idx].size() + completions[row_idx].size());
    completion_len = std::max<int64_t>(completion_len, completions[row_idx].size());
  }
  const int64_t vocab = model.config().vocab_size;
  for (int64_t row_idx = 0; row_idx < batch; ++row_idx) {
    for (const auto* ids : {&prompts[row_idx], &completions[row_idx]}) {
      for (int64_t id : *ids) {
        // Checked on the host: an out-of-range id on a GPU would be a device-side assert.
        if (id < 0 || id >= vocab) {
          throw std::invalid_argument("score_completions: row " + std::to_string(row_idx) + " has token " + std::to_string(id) +
                                      " outside [0, " + std::to_string(vocab) + ")");
        }
      }
    }
  }
  if (completion_len == 0) throw std::invalid_argument("score_completions: every completion is empty");
  std::vector<int64_t> input(batch * total_len, 0), positions(batch * completion_len, 0), targets(batch * completion_len, 0);
  std::vector<float> mask(batch * completion_len, 0.f);
  for (int64_t row_idx = 0; row_idx < batch; ++row_idx) {
    const auto& prompt = prompts[row_idx];
    const auto& completion = completions[row_idx];
    const int64_t prompt_len = static_cast<int64_t>(prompt.size());
    std::copy(prompt.begin(), prompt.end(), input.begin() + row_idx * total_len);
    std::copy(completion.begin(), completion.end(), input.begin() + row_idx * total_len + prompt_len);
    for (int64_t tok_idx = 0; tok_idx < static_cast<int64_t>(completion.size()); ++tok_idx) {
      positions[row_idx * completion_len + tok_idx] = prompt_len + tok_idx - 1;  // the logits row that predicts it
      targets[row_idx * completion_len + tok_idx] = completion[tok_idx];
      mask[row_idx * completion_len + tok_idx] = 1.f;
    }
  }
  auto long_opts = at::TensorOptions().dtype(at::kLong);
  c10::Device device = model.device();
  at::Tensor input_ids = at::tensor(input, long_opts).view({batch, total_len}).to(device);
  at::Tensor position_ids = at::tensor(positions, long_opts).view({batch, completion_len}).to(device);
  at::Tensor target_ids = at::tensor(targets, long_opts).view({batch, completion_len}).to(device);
  at::Tensor mask_t = at::tensor(mask, at::TensorOptions().dtype(at::kFloat)).view({batch, completion_len}).to(device);
  at::Tensor logits = model.forward(input_ids);
  CompletionScores scores;
  scores.logprobs = gather_token_logprobs(logits, position_ids, target_ids, temperature) * mask_t;
  scores.mask = mask_t;
  return scores;
}

}  // namespace kforge::policy
