// SFT loss: only completion tokens count (padding masked, even when it holds
// -inf), normalisation by the step's token count. Run: ctest -R train_test
// (one binary: build/bin/train_test --gtest_filter='CompletionNll*')
#include "worker/train/sft_loss.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <limits>

using namespace kforge::train;

TEST(CompletionNll, IsTheMeanNegativeLogLikelihoodOfMaskedTokens) {
  at::Tensor logprobs = at::tensor({-1.0f, -2.0f, -3.0f, -0.5f, -0.25f, -9.0f}).reshape({2, 3}).set_requires_grad(true);
  at::Tensor mask = at::tensor({1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 0.0f}).reshape({2, 3});
  at::Tensor loss = completion_nll(logprobs, mask);
  EXPECT_NEAR(loss.item<double>(), (1 + 2 + 3 + 0.5 + 0.25) / 5, 1e-6);
  loss.backward();
  EXPECT_NEAR(logprobs.grad()[0][0].item<double>(), -1.0 / 5, 1e-6);
  EXPECT_EQ(logprobs.grad()[1][2].item<float>(), 0.0f);
}

TEST(CompletionNll, PaddingHoldingInfinityStaysOut) {
  float inf = std::numeric_limits<float>::infinity();
  at::Tensor logprobs = at::tensor({-1.0f, -inf}).reshape({1, 2}).set_requires_grad(true);
  at::Tensor mask = at::tensor({1.0f, 0.0f}).reshape({1, 2});
  at::Tensor loss = completion_nll(logprobs, mask);
  EXPECT_NEAR(loss.item<double>(), 1.0, 1e-6);
  loss.backward();
  EXPECT_EQ(logprobs.grad()[0][1].item<float>(), 0.0f);
}

TEST(CompletionNll, StepNormaliserAndShapeErrors) {
  at::Tensor logprobs = at::full({2, 2}, -2.0f);
  at::Tensor mask = at::ones({2, 2});
  EXPECT_NEAR(completion_nll(logprobs, mask, 16).item<double>(), 8.0 / 16, 1e-6);
  EXPECT_NEAR(completion_nll(logprobs, at::zeros({2, 2})).item<double>(), 0.0, 1e-9);
  EXPECT_THROW(completion_nll(logprobs, at::ones({2, 3})), std::invalid_argument);
}
