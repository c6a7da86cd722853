// Mixed precision (worker/policy/autocast.h) on the CPU, where autocast is bf16: scores
// under the guard are close to float32 ones but not equal (the matmuls ran in bf16),
// gradients reach the float32 weights as float32, sampling works, and the guard restores
// full precision when it ends. Run: scripts/test.sh build -R policy
#include "worker/policy/autocast.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "tests/worker/policy/policy_test_util.h"
#include "worker/policy/sampler.h"
#include "worker/policy/scoring.h"

namespace kp = kforge::policy;
using kforge::test::perturb_weights;
using kforge::test::tiny_config;

TEST(Autocast, Bf16ScoresAreCloseGradientsStayFloat32AndTheGuardRestores) {
  kp::Model model = kp::Model::random(tiny_config("qwen2"), 7);
  perturb_weights(model, 8);
  for (auto& tensor : model.parameter_list()) tensor.requires_grad_(true);
  std::vector<std::vector<int64_t>> prompts{{1, 2, 3, 4}, {5, 6}};
  std::vector<std::vector<int64_t>> completions{{7, 8, 9}, {10, 11}};
  at::Tensor full = kp::score_completions(model, prompts, completions, 1.0).logprobs.detach();
  at::Tensor mixed;
  {
    kp::AutocastGuard guard(at::kCPU, kp::parse_precision("bf16"));
    kp::CompletionScores scores = kp::score_completions(model, prompts, completions, 1.0);
    EXPECT_EQ(scores.logprobs.scalar_type(), at::kFloat) << "log-probs are taken in float32";
    scores.logprobs.sum().backward();
    mixed = scores.logprobs.detach();
    kp::SampleOptions options;
    options.group_size = 2;
    options.max_new_tokens = 4;
    options.seed = 3;
    auto samples = kp::sample_group(model, nullptr, {1, 2, 3}, options);
    ASSERT_EQ(samples.size(), 2u);
    EXPECT_FALSE(samples[0].tokens.empty());
  }
  EXPECT_LT((mixed - full).abs().max().item<double>(), 0.25) << "bf16 matmuls stay close";
  EXPECT_GT((mixed - full).abs().max().item<double>(), 0.0) << "the guard did switch the matmuls to bf16";
  for (auto& tensor : model.parameter_list()) {
    EXPECT_EQ(tensor.scalar_type(), at::kFloat) << "master weights stay float32";
    ASSERT_TRUE(tensor.grad().defined());
    EXPECT_EQ(tensor.grad().scalar_type(), at::kFloat);
    EXPECT_TRUE(at::isfinite(tensor.grad()).all().item<bool>());
  }
  at::Tensor after = kp::score_completions(model, prompts, completions, 1.0).logprobs.detach();
  EXPECT_TRUE(at::equal(after, full)) << "full precision again once the guard is gone";
  { kp::AutocastGuard off(at::kCPU, kp::parse_precision("float32")); }  // nullopt: nothing to do
  EXPECT_THROW(kp::parse_precision("int8"), std::invalid_argument);
  EXPECT_THROW(kp::AutocastGuard(at::kCPU, at::kHalf), std::invalid_argument);
}
