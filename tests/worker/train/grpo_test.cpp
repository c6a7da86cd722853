// GRPO advantages and loss on small deterministic cases: clipping at eps_low /
// eps_high, masking, token-level normalisation, k3 KL, log-ratio clamp, and a few
// GRPO steps with reward "contains token 5" raising that token's probability.
// Run: ctest -R train_test
// (one binary: build/bin/train_test --gtest_filter='GroupAdvantages*:GrpoLoss*:GrpoSteps*:OverlongPenalty*:TokenHelpers*')
#include "worker/train/grpo.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>

#include "tests/worker/train/tiny_policy.h"
#include "worker/train/optim.h"

using namespace kforge::train;

namespace {

at::Tensor leaf(std::vector<float> values, std::vector<int64_t> shape) {
  return at::tensor(values, at::kFloat).reshape(shape).set_requires_grad(true);
}
at::Tensor constant(std::vector<float> values, std::vector<int64_t> shape) {
  return at::tensor(values, at::kFloat).reshape(shape);
}

}  // namespace

TEST(GroupAdvantages, MeanCentredAndOptionallyStdScaled) {
  std::vector<double> rewards = {1, 0, 0, 1, /*group 2*/ 2, 2, 2, 2, /*group 3*/ 0, 0, 0, 3};
  GroupAdvantages plain = group_advantages(rewards, 4, /*scale_by_std=*/false);
  EXPECT_EQ(plain.groups_kept, 2);
  EXPECT_EQ(plain.groups_dropped, 1);
  std::vector<double> expected = {0.5, -0.5, -0.5, 0.5, 0, 0, 0, 0, -0.75, -0.75, -0.75, 2.25};
  for (size_t sample_idx = 0; sample_idx < rewards.size(); ++sample_idx)
    EXPECT_NEAR(plain.advantages[sample_idx], expected[sample_idx], 1e-12) << sample_idx;
  EXPECT_TRUE(plain.keep[0]);
  EXPECT_FALSE(plain.keep[5]);

  GroupAdvantages scaled = group_advantages(rewards, 4, /*scale_by_std=*/true, /*std_eps=*/0.0);
  // Group 1: std 0.5 -> +-1. Group 3: std = sqrt(3*0.5625 + 5.0625)/2 = 1.299...
  EXPECT_NEAR(scaled.advantages[0], 1.0, 1e-12);
  EXPECT_NEAR(scaled.advantages[1], -1.0, 1e-12);
  double std3 = std::sqrt((3 * 0.5625 + 5.0625) / 4);
  EXPECT_NEAR(scaled.advantages[11], 2.25 / std3, 1e-12);
  for (int member = 4; member < 8; ++member) EXPECT_EQ(scaled.advantages[member], 0.0);
}

TEST(GroupAdvantages, RejectsRaggedGroups) {
  EXPECT_THROW(group_advantages({1, 2, 3}, 2, false), std::invalid_argument);
  EXPECT_THROW(group_advantages({1, 2}, 0, false), std::invalid_argument);
}

TEST(OverlongPenalty, LinearInTheBufferThenFull) {
  EXPECT_EQ(overlong_penalty(100, 512, 128), 0.0);
  EXPECT_EQ(overlong_penalty(384, 512, 128), 0.0);
  EXPECT_NEAR(overlong_penalty(448, 512, 128), -0.5, 1e-12);
  EXPECT_NEAR(overlong_penalty(512, 512, 128, 2.0), -2.0, 1e-12);
  EXPECT_NEAR(overlong_penalty(900, 512, 128), -1.0, 1e-12);
}

TEST(GrpoLoss, UnclippedTokensGetThePolicyGradient) {
  // Ratio 1 everywhere: loss = -mean(A) over active tokens; d loss / d logp_t = -A_b / N.
  at::Tensor logp = leaf({-1, -2, -3, -1, -2, -3}, {2, 3});
  GrpoLossInputs in;
  in.logp = logp;
  in.old_logp = logp.detach().clone();
  in.advantages = constant({2.0, -1.0}, {2});
  in.mask = at::ones({2, 3});
  GrpoLossResult out = grpo_loss(in, {});
  out.loss.backward();
  EXPECT_NEAR(out.loss.item<double>(), -(3 * 2.0 + 3 * -1.0) / 6, 1e-6);
  EXPECT_EQ(out.active_tokens, 6);
  EXPECT_NEAR(logp.grad()[0][0].item<double>(), -2.0 / 6, 1e-6);
  EXPECT_NEAR(logp.grad()[1][2].item<double>(), 1.0 / 6, 1e-6);
  EXPECT_DOUBLE_EQ(out.clip_fraction, 0.0);
  EXPECT_NEAR(out.ratio_mean, 1.0, 1e-6);
}

TEST(GrpoLoss, ClipsAtEpsHighForPositiveAndEpsLowForNegativeAdvantages) {
  GrpoLossConfig config;
  config.eps_low = 0.2;
  config.eps_high = 0.28;
  // log ratios: 0.4 (r=1.49 > 1.28), 0.1 (r=1.105 inside), -0.4 (r=0.67 < 0.8), -0.1 (inside)
  std::vector<float> old = {0, 0, 0, 0};
  at::Tensor logp = leaf({0.4f, 0.1f, -0.4f, -0.1f}, {1, 4});
  auto run = [&](float advantage) {
    if (logp.grad().defined()) logp.mutable_grad().zero_();
    GrpoLossInputs in;
    in.logp = logp;
    in.old_logp = constant(old, {1, 4});
    in.advantages = constant({advantage}, {1});
    in.mask = at::ones({1, 4});
    GrpoLossResult out = grpo_loss(in, config);
    out.loss.backward();
    return out;
  };
  // A > 0: only the token above 1 + eps_high is clipped (zero gradient); the low-ratio
  // token keeps its gradient because min(rA, clip(r)A) picks rA there.
  GrpoLossResult pos = run(1.0f);
  EXPECT_DOUBLE_EQ(pos.clip_high_fraction, 0.25);
  EXPECT_DOUBLE_EQ(pos.clip_low_fraction, 0.0);
  EXPECT_EQ(logp.grad()[0][0].item<float>(), 0.0f);
  EXPECT_NEAR(logp.grad()[0][1].item<double>(), -std::exp(0.1) / 4, 1e-6);
  EXPECT_NEAR(logp.grad()[0][2].item<double>(), -std::exp(-0.4) / 4, 1e-6);
  // Clipped token contributes -(1 + eps_high) * A to the loss.
  double expected = -(1.28 + std::exp(0.1) + std::exp(-0.4) + std::exp(-0.1)) / 4;
  EXPECT_NEAR(pos.loss.item<double>(), expected, 1e-6);

  // A < 0: only the token below 1 - eps_low is clipped.
  GrpoLossResult neg = run(-1.0f);
  EXPECT_DOUBLE_EQ(neg.clip_low_fraction, 0.25);
  EXPECT_DOUBLE_EQ(neg.clip_high_fraction, 0.0);
  EXPECT_EQ(logp.grad()[0][2].item<float>(), 0.0f);
  EXPECT_NEAR(logp.grad()[0][0].item<double>(), std::exp(0.4) / 4, 1e-6);
}

TEST(GrpoLoss, MaskedTokensNeitherCountNorGetGradient) {
  at::Tensor logp = leaf({-1, -2, -3, -4, -1, -2, -3, -4}, {2, 4});
  at::Tensor mask = constant({1, 1, 0, 0, 1, 0, 0, 0}, {2, 4});
  GrpoLossInputs in;
  in.logp = logp;
  in.old_logp = logp.detach() - 0.05;
  in.advantages = constant({1.0, 2.0}, {2});
  in.mask = mask;
  GrpoLossResult out = grpo_loss(in, {});
  out.loss.backward();
  EXPECT_EQ(out.active_tokens, 3);
  EXPECT_NEAR(out.loss.item<double>(), -std::exp(0.05) * (1 + 1 + 2) / 3, 1e-5);
  EXPECT_EQ(logp.grad()[0][2].item<float>(), 0.0f);
  EXPECT_EQ(logp.grad()[1][3].item<float>(), 0.0f);
  EXPECT_NE(logp.grad()[1][0].item<float>(), 0.0f);

  // Garbage at masked positions (even inf) changes nothing.
  at::Tensor noisy = logp.detach().clone();
  noisy[0][3] = 50.0f;
  in.logp = noisy;
  EXPECT_NEAR(grpo_loss(in, {}).loss.item<double>(), out.loss.item<double>(), 1e-6);
}

TEST(GrpoLoss, StepNormalisationMakesMicroBatchesAddUpToTheWholeStep) {
  at::manual_seed(3);
  at::Tensor logp = at::randn({4, 5});
  at::Tensor old = logp + 0.1 * at::randn({4, 5});
  at::Tensor adv = at::randn({4});
  at::Tensor mask = (at::rand({4, 5}) > 0.3).to(at::kFloat);
  int64_t total = mask.sum().item<int64_t>();
  GrpoLossInputs whole{logp, old, {}, adv, mask, {}, 0};
  double whole_loss = grpo_loss(whole, {}).loss.item<double>();
  double parts = 0;
  for (int64_t half = 0; half < 2; ++half) {
    GrpoLossInputs part{logp.slice(0, 2 * half, 2 * half + 2), old.slice(0, 2 * half, 2 * half + 2), {},
                        adv.slice(0, 2 * half, 2 * half + 2),  mask.slice(0, 2 * half, 2 * half + 2), {},
                        total};
    parts += grpo_loss(part, {}).loss.item<double>();
  }
  EXPECT_NEAR(parts, whole_loss, 1e-5);
}

TEST(GrpoLoss, K3KlIsZeroAtTheReferenceAndPositiveAway) {
  GrpoLossConfig config;
  config.kl_beta = 0.5;
  at::Tensor logp = leaf({-1.0f, -2.0f}, {1, 2});
  GrpoLossInputs in;
  in.logp = logp;
  in.old_logp = logp.detach().clone();
  in.ref_logp = logp.detach().clone();
  in.advantages = constant({0.0f}, {1});
  in.mask = at::ones({1, 2});
  GrpoLossResult same = grpo_loss(in, config);
  EXPECT_NEAR(same.kl, 0.0, 1e-7);
  same.loss.backward();
  EXPECT_NEAR(logp.grad().abs().sum().item<double>(), 0.0, 1e-7);

  in.ref_logp = constant({-1.5f, -1.0f}, {1, 2});
  GrpoLossResult apart = grpo_loss(in, config);
  auto k3 = [](double d) { return std::exp(d) - d - 1; };
  double kl = (k3(-0.5) + k3(1.0)) / 2;
  EXPECT_NEAR(apart.kl, kl, 1e-6);
  EXPECT_NEAR(apart.loss.item<double>(), 0.5 * kl, 1e-6);
  EXPECT_THROW(grpo_loss({logp, logp.detach(), {}, in.advantages, in.mask, {}, 0}, config), std::invalid_argument);
}

TEST(GrpoLoss, LogRatioIsClampedSoOneTokenCannotOverflow) {
  GrpoLossConfig config;
  config.log_ratio_clamp = 5.0;
  GrpoLossInputs in;
  in.logp = constant({0.0f}, {1, 1});
  in.old_logp = constant({-500.0f}, {1, 1});
  in.advantages = constant({-1.0f}, {1});
  in.mask = at::ones({1, 1});
  GrpoLossResult out = grpo_loss(in, config);
  EXPECT_TRUE(std::isfinite(out.loss.item<double>()));
  EXPECT_NEAR(out.ratio_mean, std::exp(5.0), 1e-2);
}

TEST(GrpoLoss, RejectsBadShapesAndConfig) {
  GrpoLossInputs in;
  in.logp = at::zeros({2, 3});
  in.old_logp = at::zeros({2, 4});
  in.advantages = at::zeros({2});
  in.mask = at::ones({2, 3});
  try {
    grpo_loss(in, {});
    FAIL() << "expected a shape error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("old_logp"), std::string::npos) << e.what();
  }
  in.old_logp = at::zeros({2, 3});
  GrpoLossConfig bad;
  bad.eps_low = 1.5;
  EXPECT_THROW(grpo_loss(in, bad), std::invalid_argument);
}

TEST(TokenHelpers, EntropyAndGatheredLogprobs) {
  at::Tensor uniform = at::zeros({1, 2, 8});
  EXPECT_NEAR(token_entropy(uniform)[0][1].item<double>(), std::log(8.0), 1e-6);
  at::Tensor logits = at::randn({2, 3, 5});
  at::Tensor tokens = at::randint(0, 5, {2, 3}, at::kLong);
  at::Tensor got = gather_token_logprobs(logits, tokens);
  EXPECT_NEAR(got[1][2].item<double>(),
              at::log_softmax(logits[1][2], -1)[tokens[1][2].item<int64_t>()].item<double>(), 1e-6);
}

// The test at the loss level: reward 1 for completions containing token 5,
// else 0. A few GRPO steps (sample G per group, advantages, two clipped updates on the
// same samples) must raise the probability of token 5 and the mean reward.
TEST(GrpoSteps, RewardForContainingATokenRaisesItsProbability) {
  constexpr int64_t kTarget = 5;
  constexpr int kGroups = 4, kGroupSize = 8;
  test::TinyBigramPolicy policy(/*vocab=*/9, /*seed=*/11);
  SamplingConfig sampling;
  sampling.max_new_tokens = 4;
  OptimConfig optim_config;
  optim_config.lr = 0.05;
  optim_config.weight_decay = 0.0;
  optim_config.total_steps = 100;
  Optimizer optimizer(policy.parameters(), optim_config);
  double prob_before = policy.mean_prob(kTarget);
  double first_reward = -1, last_reward = -1;
  for (int step_idx = 0; step_idx < 10; ++step_idx) {
    std::vector<std::vector<int64_t>> prompts, completions;
    std::vector<double> rewards;
    for (int group_idx = 0; group_idx < kGroups; ++group_idx) {
      std::vector<int64_t> prompt = {group_idx};
      for (auto& sample : policy.sample(prompt, kGroupSize, sampling, 100 * step_idx + group_idx)) {
        bool has_target = std::find(sample.tokens.begin(), sample.tokens.end(), kTarget) != sample.tokens.end();
        rewards.push_back(has_target ? 1.0 : 0.0);
        prompts.push_back(prompt);
        completions.push_back(sample.tokens);
      }
    }
    double mean_reward = 0;
    for (double r : rewards) mean_reward += r / rewards.size();
    if (first_reward < 0) first_reward = mean_reward;
    last_reward = mean_reward;
    GroupAdvantages adv = group_advantages(rewards, kGroupSize, true);
    at::Tensor keep = at::zeros({static_cast<int64_t>(rewards.size()), 1});
    for (size_t sample_idx = 0; sample_idx < adv.keep.size(); ++sample_idx)
      keep[sample_idx][0] = adv.keep[sample_idx] ? 1.0 : 0.0;
    ScoredCompletions old_scores = policy.score(prompts, completions);
    at::Tensor old_logp = old_scores.logprobs.detach();
    for (int epoch = 0; epoch < 2; ++epoch) {
      ScoredCompletions scores = policy.score(prompts, completions);
      GrpoLossInputs in;
      in.logp = scores.logprobs;
      in.old_logp = old_logp;
      in.advantages = at::tensor(adv.advantages, at::kDouble).to(at::kFloat);
      in.mask = scores.mask * keep;
      in.entropy = -old_logp;
      GrpoLossResult out = grpo_loss(in, {});
      if (out.active_tokens == 0) continue;
      (out.loss * optimizer.loss_scale()).backward();
      ASSERT_TRUE(optimizer.micro_step().has_value());
      if (epoch == 0) EXPECT_DOUBLE_EQ(out.clip_fraction, 0.0) << "first epoch is on-policy";
      EXPECT_GT(out.entropy, 0.0);
    }
  }
  double prob_after = policy.mean_prob(kTarget);
  std::cerr << "p(token 5) " << prob_before << " -> " << prob_after << ", mean reward " << first_reward << " -> "
            << last_reward << "\n";
  EXPECT_GT(prob_after, 2 * prob_before);
  EXPECT_GT(last_reward, first_reward);
}
