// Teacher-forced scoring: batched, padded log-probs equal a manual per-row
// log_softmax, padding is masked, and gradients reach the weights.
// Run: scripts/test.sh build -R policy
#include "worker/policy/scoring.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>

#include "tests/worker/policy/policy_test_util.h"

namespace kp = kforge::policy;
using kforge::test::perturb_weights;
using kforge::test::tiny_config;

TEST(Scoring, MatchesManualLogSoftmaxPerRow) {
  kp::Model model = kp::Model::random(tiny_config("llama"), 41);
  perturb_weights(model, 42);
  std::vector<std::vector<int64_t>> prompts{{1, 2, 3}, {7}, {9, 9, 9, 9, 9}};
  std::vector<std::vector<int64_t>> completions{{4, 5}, {8, 100, 200, 299}, {1}};
  c10::NoGradGuard no_grad;
  for (double temperature : {1.0, 0.5}) {
    kp::CompletionScores scores = kp::score_completions(model, prompts, completions, temperature);
    ASSERT_EQ(scores.logprobs.sizes(), (std::vector<int64_t>{3, 4}));
    for (std::size_t row_idx = 0; row_idx < prompts.size(); ++row_idx) {
      std::vector<int64_t> seq = prompts[row_idx];
      seq.insert(seq.end(), completions[row_idx].begin(), completions[row_idx].end());
      at::Tensor logits = model.forward(at::tensor(seq, at::kLong).unsqueeze(0)).squeeze(0);
      for (std::size_t tok_idx = 0; tok_idx < 4; ++tok_idx) {
        if (tok_idx >= completions[row_idx].size()) {
          EXPECT_EQ(scores.mask[row_idx][tok_idx].item<float>(), 0.f);
          EXPECT_EQ(scores.logprobs[row_idx][tok_idx].item<float>(), 0.f);
          continue;
        }
        int64_t predicting = static_cast<int64_t>(prompts[row_idx].size() + tok_idx) - 1;
        double manual = at::log_softmax(logits[predicting] / temperature, -1)[completions[row_idx][tok_idx]].item<double>();
        EXPECT_NEAR(scores.logprobs[row_idx][tok_idx].item<double>(), manual, 1e-5) << row_idx << "," << tok_idx;
        EXPECT_EQ(scores.mask[row_idx][tok_idx].item<float>(), 1.f);
      }
    }
  }
}

TEST(Scoring, GradientFlowsToWeights) {
  kp::Model model = kp::Model::random(tiny_config("qwen2"), 43);
  for (const auto& tensor : model.parameter_list()) tensor.requires_grad_(true);
  kp::CompletionScores scores = kp::score_completions(model, {{1, 2, 3}, {4}}, {{5, 6}, {7, 8, 9}});
  at::Tensor loss = -(scores.logprobs * scores.mask).sum() / scores.mask.sum();
  loss.backward();
  for (const auto& [name, tensor] : model.parameters()) {
    ASSERT_TRUE(tensor.grad().defined()) << name;
  }
  EXPECT_GT(model.parameters().at("model.layers.0.self_attn.q_proj.weight").grad().abs().sum().item<double>(), 0.0);
  EXPECT_GT(model.parameters().at("model.embed_tokens.weight").grad().abs().sum().item<double>(), 0.0);
  // A gradient step along -grad raises the scored log-prob.
  double before = loss.item<double>();
  {
    c10::NoGradGuard no_grad;
    for (const auto& tensor : model.parameter_list()) tensor.sub_(tensor.grad() * 0.5);
  }
  kp::CompletionScores after = kp::score_completions(model, {{1, 2, 3}, {4}}, {{5, 6}, {7, 8, 9}});
  EXPECT_LT((-(after.logprobs * after.mask).sum() / after.mask.sum()).item<double>(), before);
}

TEST(Scoring, BadBatchesAreRefused) {
  kp::Model model = kp::Model::random(tiny_config("qwen2"), 1);
  EXPECT_THROW(kp::score_completions(model, {{1}}, {}), std::invalid_argument);
  EXPECT_THROW(kp::score_completions(model, {{}}, {{1}}), std::invalid_argument);
  EXPECT_THROW(kp::score_completions(model, {{1}}, {{}}), std::invalid_argument);
  EXPECT_THROW(kp::score_completions(model, {{1}}, {{300}}), std::invalid_argument);  // vocab is 300
  EXPECT_THROW(kp::score_completions(model, {{-1}}, {{2}}), std::invalid_argument);
}
