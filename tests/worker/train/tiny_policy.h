// A tiny learnable bigram policy for trainer tests: the next token depends only on
// the previous one (a [V,V] logits table), tokens are the letters 'a'.., and the
// last letter is a stop token. Samples, scores and trains in milliseconds.
#pragma once

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>  // c10::NoGradGuard (at::NoGradGuard is gone in torch 2.11)
#include <ATen/CPUGeneratorImpl.h>

#include <fstream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "worker/train/trainable_policy.h"

namespace kforge::train::test {

//! Bigram model over V letters; letter V-1 stops a completion.
class TinyBigramPolicy : public TrainablePolicy {
 public:
  at::Tensor table;  //!< [V,V] logits of next token given previous token, requires grad

  TinyBigramPolicy(int64_t vocab, uint64_t seed) {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
    table = (at::randn({vocab, vocab}, gen) * 0.1).set_requires_grad(true);
  }

  int64_t vocab() const { return table.size(0); }
  int64_t stop_token() const { return vocab() - 1; }

  int64_t eos_token() const override { return stop_token(); }

  std::vector<int64_t> encode(const std::string& text) const override {
    std::vector<int64_t> ids;
    for (char c : text) {
      if (c < 'a' || c >= 'a' + vocab()) throw std::invalid_argument(std::string("tiny policy cannot encode ") + c);
      ids.push_back(c - 'a');
    }
    return ids;
  }

  std::vector<Completion> sample(const std::vector<int64_t>& prompt, int count, const SamplingConfig& config,
                                 uint64_t seed) override {
    c10::NoGradGuard no_grad;
    auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
    std::vector<Completion> out(count);
    at::Tensor logp_table = at::log_softmax(table.detach() / config.temperature, -1);
    for (int row = 0; row < count; ++row) {
      int64_t prev = prompt.empty() ? 0 : prompt.back();
      for (int64_t pos = 0; pos < config.max_new_tokens; ++pos) {
        int64_t next = at::multinomial(logp_table[prev].exp(), 1, false, gen).item<int64_t>();
        out[row].tokens.push_back(next);
        out[row].logprobs.push_back(logp_table[prev][next].item<float>());
        if (next == stop_token()) break;
        out[row].text.push_back(static_cast<char>('a' + next));
        prev = next;
      }
      out[row].truncated = out[row].tokens.back() != stop_token();
    }
    return out;
  }

  ScoredCompletions score(const std::vector<std::vector<int64_t>>& prompts,
                          const std::vector<std::vector<int64_t>>& completions) override {
    int64_t rows = completions.size(), width = 1;
    for (const auto& c : completions) width = std::max<int64_t>(width, c.size());
    at::Tensor context = at::zeros({rows, width}, at::kLong), target = at::zeros({rows, width}, at::kLong);
    at::Tensor mask = at::zeros({rows, width});
    for (int64_t row = 0; row < rows; ++row) {
      int64_t prev = prompts[row].empty() ? 0 : prompts[row].back();
      for (size_t pos = 0; pos < completions[row].size(); ++pos) {
        context[row][pos] = prev;
        target[row][pos] = completions[row][pos];
        mask[row][pos] = 1.0;
        prev = completions[row][pos];
      }
    }
    at::Tensor logp = at::log_softmax(table.index_select(0, context.reshape({-1})), -1)
                          .reshape({rows, width, vocab()})
                          .gather(-1, target.unsqueeze(-1))
                          .squeeze(-1);
    return {logp * mask, mask};
  }

  std::vector<at::Tensor> parameters() override { return {table}; }

  void save(const std::string& dir) const override {
    at::Tensor flat = table.detach().contiguous();
    std::ofstream file(dir + "/table.bin", std::ios::binary);
    file.write(reinterpret_cast<const char*>(flat.data_ptr<float>()), flat.numel() * sizeof(float));
    if (!file) throw std::runtime_error("cannot write " + dir + "/table.bin");
  }

  void load(const std::string& dir) override {
    at::Tensor flat = at::empty_like(table.detach());
    std::ifstream file(dir + "/table.bin", std::ios::binary);
    file.read(reinterpret_cast<char*>(flat.data_ptr<float>()), flat.numel() * sizeof(float));
    if (!file) throw std::runtime_error("cannot read " + dir + "/table.bin");
    c10::NoGradGuard no_grad;
    table.copy_(flat);
  }

  //! Mean over contexts of the probability of emitting `token` next.
  double mean_prob(int64_t token) const {
    c10::NoGradGuard no_grad;
    return at::softmax(table, -1).select(1, token).mean().item<double>();
  }
};

}  // namespace kforge::train::test
