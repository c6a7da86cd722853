// Reward from check outcomes (the design brief's "Reward", docs/training.md): zero for
// format errors and rule violations, ordered partial credit, capped speed bonus.
// Run: ctest -R train_test (build/bin/train_test --gtest_filter='Reward*').
#include "worker/train/reward.h"

#include <gtest/gtest.h>

#include <limits>

using namespace kforge::train;

TEST(Reward, FormatErrorAndRuleViolationGetNothingEvenWithASpeedup) {
  RewardConfig config;
  EXPECT_EQ(reward_for({Outcome::format_error, 2.0, false}, config), 0.0);
  // A rule violation whose output would be right (the harness reports speedup) still gets 0.
  EXPECT_EQ(reward_for({Outcome::rule_violation, 3.0, false}, config), 0.0);
}

TEST(Reward, PartialCreditIsHierarchical) {
  RewardConfig config;
  double compile_error = reward_for({Outcome::compile_error}, config);
  double runtime_error = reward_for({Outcome::runtime_error}, config);
  double timeout = reward_for({Outcome::timeout}, config);
  double wrong_output = reward_for({Outcome::wrong_output}, config);
  double correct = reward_for({Outcome::correct, 0.0, false}, config);
  EXPECT_GT(compile_error, 0.0);
  EXPECT_GT(runtime_error, compile_error);
  EXPECT_EQ(timeout, runtime_error);
  EXPECT_GT(wrong_output, runtime_error);
  EXPECT_LT(wrong_output, 1.0);
  EXPECT_EQ(correct, 1.0);
}

TEST(Reward, SpeedBonusIsWeightedAndCapped) {
  RewardConfig config;  // w = 0.5, cap = 3
  EXPECT_DOUBLE_EQ(reward_for({Outcome::correct, 0.5, false}, config), 1.25);
  EXPECT_DOUBLE_EQ(reward_for({Outcome::correct, 2.0, false}, config), 2.0);
  EXPECT_DOUBLE_EQ(reward_for({Outcome::correct, 3.0, false}, config), 2.5);
  EXPECT_DOUBLE_EQ(reward_for({Outcome::correct, 40.0, false}, config), 2.5);
  EXPECT_DOUBLE_EQ(reward_for({Outcome::correct, std::numeric_limits<double>::infinity(), false}, config), 1.0);
}

TEST(Reward, SuspiciousSpeedupGetsCorrectnessButNoBonusByDefault) {
  RewardConfig config;
  EXPECT_DOUBLE_EQ(reward_for({Outcome::correct, 50.0, true}, config), 1.0);
  config.bonus_for_suspicious = true;
  EXPECT_DOUBLE_EQ(reward_for({Outcome::correct, 50.0, true}, config), 2.5);
}

TEST(Reward, CorrectOnAWeakTestGetsNoCorrectnessReward) {
  RewardConfig config;
  CheckSummary constant{Outcome::correct, 3.0, false};
  constant.weak_test = true;  // a near-constant reference: a constant output passes
  EXPECT_DOUBLE_EQ(reward_for(constant, config), config.weak_test_correct);
  EXPECT_LT(reward_for(constant, config), config.correct);
  EXPECT_DOUBLE_EQ(reward_for(constant, config), reward_for({Outcome::wrong_output}, config));
}

TEST(Reward, EveryWeightIsConfigurable) {
  RewardConfig config;
  config.compile_error = 0.0;
  config.wrong_output = 0.5;
  config.correct = 2.0;
  config.speed_weight = 1.0;
  config.speed_cap = 10.0;
  config.rule_violation = -1.0;
  EXPECT_EQ(reward_for({Outcome::compile_error}, config), 0.0);
  EXPECT_EQ(reward_for({Outcome::wrong_output}, config), 0.5);
  EXPECT_DOUBLE_EQ(reward_for({Outcome::correct, 4.0, false}, config), 6.0);
  EXPECT_EQ(reward_for({Outcome::rule_violation, 4.0, false}, config), -1.0);
}

TEST(Reward, ValidateNamesTheBadField) {
  RewardConfig config;
  EXPECT_EQ(config.validate(), "");
  config.speed_cap = -1;
  EXPECT_NE(config.validate().find("speed_cap"), std::string::npos);
  config = {};
  config.correct = std::numeric_limits<double>::quiet_NaN();
  EXPECT_NE(config.validate().find("reward.correct"), std::string::npos);
}

TEST(Reward, OutcomeNamesRoundTrip) {
  for (int outcome_idx = 0; outcome_idx < kOutcomeCount; ++outcome_idx) {
    auto outcome = static_cast<Outcome>(outcome_idx);
    EXPECT_EQ(outcome_from_name(outcome_name(outcome)), outcome);
  }
  EXPECT_EQ(outcome_from_name("wrong_output"), Outcome::wrong_output);
  EXPECT_FALSE(outcome_from_name("correctish").has_value());
  EXPECT_TRUE(outcome_compiled(Outcome::wrong_output));
  EXPECT_FALSE(outcome_compiled(Outcome::compile_error));
  EXPECT_FALSE(outcome_compiled(Outcome::rule_violation));
}
