// Evaluation metrics: unbiased pass@k against brute-force enumeration, fast_p over
// ALL ops, geometric-mean speedup, suspicious speedups never fast. Run: ctest -R train_test
// (one binary: build/bin/train_test --gtest_filter='PassAtK*:SummarizeEval*')
#include "worker/train/eval_metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

using namespace kforge::train;

namespace {

double binomial(int n, int k) {
  if (k < 0 || k > n) return 0;
  double value = 1;
  for (int term = 1; term <= k; ++term) value = value * (n - k + term) / term;
  return value;
}

EvalSample correct(double speedup, bool suspicious = false) { return {Outcome::correct, speedup, suspicious}; }
EvalSample failed(Outcome outcome) { return {outcome, 0.0, false}; }

}  // namespace

TEST(PassAtK, MatchesTheCombinatorialDefinition) {
  for (int n = 1; n <= 12; ++n)
    for (int c = 0; c <= n; ++c)
      for (int k = 1; k <= n; ++k)
        EXPECT_NEAR(pass_at_k(n, c, k), 1.0 - binomial(n - c, k) / binomial(n, k), 1e-12)
            << "n=" << n << " c=" << c << " k=" << k;
  EXPECT_DOUBLE_EQ(pass_at_k(10, 3, 1), 0.3);
  EXPECT_DOUBLE_EQ(pass_at_k(10, 0, 5), 0.0);
  EXPECT_DOUBLE_EQ(pass_at_k(10, 6, 5), 1.0);  // 4 failures cannot fill 5 draws
  // Stable for large n, where the binomials overflow doubles.
  EXPECT_NEAR(pass_at_k(2000, 1, 1), 1.0 / 2000, 1e-12);
}

TEST(PassAtK, RejectsImpossibleCounts) {
  EXPECT_THROW(pass_at_k(5, 6, 1), std::invalid_argument);
  EXPECT_THROW(pass_at_k(5, 2, 6), std::invalid_argument);
  EXPECT_THROW(pass_at_k(0, 0, 1), std::invalid_argument);
}

TEST(SummarizeEval, ComputesRatesOverAllOps) {
  std::vector<OpSamples> ops = {
      {"relu", {correct(2.5), correct(1.2), failed(Outcome::wrong_output), failed(Outcome::compile_error)}},
      {"gelu", {correct(0.8), correct(0.9), correct(1.6), correct(1.1)}},
      {"softmax", {failed(Outcome::format_error), failed(Outcome::rule_violation), failed(Outcome::timeout),
                   failed(Outcome::runtime_error)}},
  };
  EvalSummary summary = summarize_eval(ops, 2);
  ASSERT_EQ(summary.ops, 3);
  EXPECT_EQ(summary.k, 2);
  EXPECT_NEAR(summary.correct_rate, (0.5 + 1.0 + 0.0) / 3, 1e-12);
  // compiled: relu 3/4 (two correct + wrong_output), gelu 4/4, softmax 2/4 (timeout, runtime_error)
  EXPECT_NEAR(summary.compile_rate, (0.75 + 1.0 + 0.5) / 3, 1e-12);
  EXPECT_NEAR(summary.fast_1, (2.0 / 4 + 2.0 / 4 + 0) / 3, 1e-12);
  EXPECT_NEAR(summary.fast_1_5, (1.0 / 4 + 1.0 / 4 + 0) / 3, 1e-12);
  EXPECT_NEAR(summary.fast_2, (1.0 / 4 + 0 + 0) / 3, 1e-12);
  EXPECT_NEAR(summary.pass_at_k, (pass_at_k(4, 2, 2) + 1.0 + 0.0) / 3, 1e-12);
  EXPECT_EQ(summary.ops_with_correct, 2);
  EXPECT_NEAR(summary.geomean_speedup, std::sqrt(2.5 * 1.6), 1e-12);
  ASSERT_EQ(summary.per_op.size(), 3u);
  EXPECT_EQ(summary.per_op[0].op, "relu");
  EXPECT_EQ(summary.per_op[0].correct, 2);
  EXPECT_DOUBLE_EQ(summary.per_op[0].best_speedup, 2.5);
  EXPECT_DOUBLE_EQ(summary.per_op[1].pass_at_k, 1.0);
  EXPECT_DOUBLE_EQ(summary.per_op[2].best_speedup, 0.0);
}

TEST(SummarizeEval, SuspiciousSpeedupsAreCorrectButNeverFast) {
  std::vector<OpSamples> ops = {{"add", {correct(80.0, true), correct(1.2)}}};
  EvalSummary summary = summarize_eval(ops, 1);
  EXPECT_DOUBLE_EQ(summary.correct_rate, 1.0);
  EXPECT_DOUBLE_EQ(summary.fast_2, 0.0);
  EXPECT_DOUBLE_EQ(summary.fast_1, 0.5);
  EXPECT_DOUBLE_EQ(summary.per_op[0].best_speedup, 1.2);
}

TEST(SummarizeEval, KIsClampedPerOpAndEmptyOpsCountAsFailures) {
  std::vector<OpSamples> ops = {{"one_sample", {correct(1.0)}}, {"no_samples", {}}};
  EvalSummary summary = summarize_eval(ops, 8);
  EXPECT_DOUBLE_EQ(summary.per_op[0].pass_at_k, 1.0);
  EXPECT_DOUBLE_EQ(summary.per_op[1].pass_at_k, 0.0);
  EXPECT_DOUBLE_EQ(summary.pass_at_k, 0.5);
  EXPECT_DOUBLE_EQ(summary.fast_1, 0.0);  // speedup exactly 1 is not faster
  EXPECT_THROW(summarize_eval(ops, 0), std::invalid_argument);
}
