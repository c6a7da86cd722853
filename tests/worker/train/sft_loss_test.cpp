// SFT loss: only completion tokens count (prompt and padding masked), batches are
// shifted correctly, truncation is counted. Run: build/bin/train_sft_loss_test
#include "worker/train/sft_loss.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

using namespace kforge::train;

TEST(SftBatch, ShiftsAndMasksCompletionTargetsOnly) {
  SftBatch batch = make_sft_batch({{10, 11, 12}, {20}}, {{13, 14}, {21, 22, 23}}, /*pad_id=*/0, 64);
  // Sequences: [10 11 12 13 14] and [20 21 22 23]; width = longest - 1 = 4.
  ASSERT_EQ(batch.input_ids.sizes(), (at::IntArrayRef{2, 4}));
  EXPECT_EQ(batch.input_ids[0][0].item<int64_t>(), 10);
  EXPECT_EQ(batch.targets[0][0].item<int64_t>(), 11);
  EXPECT_EQ(batch.targets[0][3].item<int64_t>(), 14);
  // Row 0 predicts 11, 12 (prompt) then 13, 14 (completion).
  std::vector<float> row0 = {0, 0, 1, 1}, row1 = {1, 1, 1, 0};
  for (int pos = 0; pos < 4; ++pos) {
    EXPECT_EQ(batch.loss_mask[0][pos].item<float>(), row0[pos]) << pos;
    EXPECT_EQ(batch.loss_mask[1][pos].item<float>(), row1[pos]) << pos;
  }
  EXPECT_EQ(batch.input_ids[1][3].item<int64_t>(), 0);  // padding
  EXPECT_EQ(batch.completion_tokens, 5);
  EXPECT_EQ(batch.truncated, 0);
}

TEST(SftBatch, TruncatesAtMaxTokensAndCountsIt) {
  SftBatch batch = make_sft_batch({{1, 2}}, {{3, 4, 5, 6}}, 0, 4);
  EXPECT_EQ(batch.truncated, 1);
  EXPECT_EQ(batch.input_ids.size(1), 3);
  EXPECT_EQ(batch.completion_tokens, 2);  // predicts 3 and 4
  EXPECT_THROW(make_sft_batch({{1}}, {}, 0, 8), std::invalid_argument);
  EXPECT_THROW(make_sft_batch({}, {}, 0, 8), std::invalid_argument);
}

TEST(CompletionLoss, IsTheMeanCrossEntropyOverCompletionTokens) {
  at::manual_seed(0);
  SftBatch batch = make_sft_batch({{1, 2, 3}, {4}}, {{5, 6}, {7, 1, 2}}, 0, 16);
  at::Tensor logits = at::randn({2, batch.input_ids.size(1), 8}).set_requires_grad(true);
  at::Tensor loss = completion_loss(logits, batch.targets, batch.loss_mask);
  double manual = 0;
  for (int64_t row = 0; row < 2; ++row)
    for (int64_t pos = 0; pos < batch.targets.size(1); ++pos)
      if (batch.loss_mask[row][pos].item<float>() > 0)
        manual -= at::log_softmax(logits[row][pos], -1)[batch.targets[row][pos].item<int64_t>()].item<double>();
  manual /= batch.completion_tokens;
  EXPECT_NEAR(loss.item<double>(), manual, 1e-5);
  loss.backward();
  // Prompt positions get no gradient.
  EXPECT_EQ(logits.grad()[0][0].abs().sum().item<float>(), 0.0f);
  EXPECT_GT(logits.grad()[0][2].abs().sum().item<float>(), 0.0f);
  // An explicit normaliser (the step's token count for accumulation) rescales.
  EXPECT_NEAR(completion_loss(logits, batch.targets, batch.loss_mask, 10.0).item<double>(),
              manual * batch.completion_tokens / 10.0, 1e-5);
  EXPECT_THROW(completion_loss(logits, batch.targets.slice(1, 0, 2), batch.loss_mask), std::invalid_argument);
}
