// A tiny learnable bigram policy for GRPO tests: logits of the next token depend
// only on the previous one (a [V,V] table). Samples, scores and trains in milliseconds.
#pragma once

#include <ATen/ATen.h>

#include <vector>

namespace kforge::train::test {

//! Bigram language model over V tokens; token 0 is the start token.
struct TinyBigramPolicy {
  at::Tensor table;  //!< [V,V] logits of next token given previous token, requires grad

  explicit TinyBigramPolicy(int64_t vocab, uint64_t seed) {
    at::manual_seed(seed);
    table = (at::randn({vocab, vocab}) * 0.1).set_requires_grad(true);
  }

  //! Samples `count` sequences of `length` tokens after the start token; returns [count,length].
  at::Tensor sample(int64_t count, int64_t length) const {
    at::NoGradGuard no_grad;
    at::Tensor tokens = at::zeros({count, length}, at::kLong);
    at::Tensor prev = at::zeros({count}, at::kLong);
    for (int64_t pos = 0; pos < length; ++pos) {
      at::Tensor probs = at::softmax(table.index_select(0, prev), -1);
      at::Tensor next = at::multinomial(probs, 1, true).squeeze(1);
      tokens.select(1, pos).copy_(next);
      prev = next;
    }
    return tokens;
  }

  //! Logits [B,T,V] for predicting each of `tokens` [B,T] (teacher forcing).
  at::Tensor logits(const at::Tensor& tokens) const {
    at::Tensor prev = at::cat({at::zeros({tokens.size(0), 1}, at::kLong), tokens.slice(1, 0, tokens.size(1) - 1)}, 1);
    return table.index_select(0, prev.reshape({-1})).reshape({tokens.size(0), tokens.size(1), table.size(1)});
  }

  //! Mean over contexts of the probability of emitting `token` next.
  double mean_prob(int64_t token) const {
    at::NoGradGuard no_grad;
    return at::softmax(table, -1).select(1, token).mean().item<double>();
  }
};

}  // namespace kforge::train::test
