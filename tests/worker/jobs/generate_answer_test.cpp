// choose_answer: the answer a generation gives from its correct candidates (flagged ones,
// eager faster). Run: ctest -R jobs_generate_answer_test.
#include <gtest/gtest.h>

#include "worker/jobs/generate_answer.h"

using namespace kforge::jobs;

TEST(GenerateAnswer, BestUnflaggedWinsOverAFasterFlaggedOne) {
  auto answer = choose_answer({{1, 2.0, false, ""}, {2, 40.0, true, "suspicious"}, {3, 3.0, false, ""}}, 5);
  ASSERT_TRUE(answer.best_id);
  EXPECT_EQ(*answer.best_id, 3);
  EXPECT_FALSE(answer.best_flagged);
  EXPECT_FALSE(answer.eager_wins);
  EXPECT_EQ(answer.message, "");
}

TEST(GenerateAnswer, EveryCorrectKernelFlaggedReturnsTheBestVerifiedWithTheReason) {
  auto answer = choose_answer({{7, 48.0, true, "eager paid page faults: 48x above the bound"},
                               {8, 302.0, true, "302x above the bound"}},
                              4);
  ASSERT_TRUE(answer.best_id);
  EXPECT_EQ(*answer.best_id, 8);
  EXPECT_TRUE(answer.best_flagged);
  EXPECT_NE(answer.message.find("every correct kernel among 4 candidates is flagged"), std::string::npos)
      << answer.message;
  EXPECT_NE(answer.message.find("302x above the bound"), std::string::npos) << answer.message;
}

TEST(GenerateAnswer, EagerWinsIsSaidPlainly) {
  auto answer = choose_answer({{1, 0.20, false, ""}, {2, 0.05, false, ""}}, 2);
  ASSERT_TRUE(answer.best_id);
  EXPECT_EQ(*answer.best_id, 1);
  EXPECT_TRUE(answer.eager_wins);
  EXPECT_NE(answer.message.find("PyTorch eager is faster"), std::string::npos) << answer.message;
  EXPECT_NE(answer.message.find("0.20x"), std::string::npos) << answer.message;
}

TEST(GenerateAnswer, NothingCorrect) {
  auto answer = choose_answer({}, 3);
  EXPECT_FALSE(answer.best_id);
  EXPECT_EQ(answer.message, "no correct kernel among 3 candidates");
  EXPECT_EQ(choose_answer({}, 0).message, "no kernel was checked") << "never 'none correct among 0 candidates'";
}
