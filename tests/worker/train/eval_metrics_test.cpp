// Evaluation metrics: unbiased pass@k against brute-force enumeration, fast_p over
// ALL ops as KernelBench defines it (vs eager and torch.compile), rule-violation rate,
// bootstrap intervals over ops, geometric-mean speedup, suspicious speedups never fast.
// Run: ctest -R train_test (one binary: build/bin/train_test --gtest_filter='PassAtK*:SummarizeEval*')
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
EvalSample correct_vs(double speedup, double vs_compile) { return {Outcome::correct, speedup, false, "", "", vs_compile}; }
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
  // By hand: n=5, c=2, k=2 is 1 - C(3,2)/C(5,2) = 1 - 3/10; one correct of 16 drawn 4 at
  // a time is found with probability 4/16; the naive 1-(1-c/n)^k would give 0.64 and 0.23.
  EXPECT_NEAR(pass_at_k(5, 2, 2), 0.7, 1e-12);
  EXPECT_NEAR(pass_at_k(16, 1, 4), 0.25, 1e-12);
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

// KernelBench's own example, one sample per task: fast_p = (1/N) sum 1(correct and speedup > p).
// Tasks: correct 1.2x, correct 0.8x, wrong, correct 2.5x -> fast_0 3/4, fast_1 2/4,
// fast_1.5 1/4, fast_2 1/4. Against torch.compile the same kernels are 0.9x, 0.5x, -, 1.6x.
TEST(SummarizeEval, FastPMatchesKernelBenchOverAllTasks) {
  std::vector<OpSamples> ops = {{"a", {correct_vs(1.2, 0.9)}},
                                {"b", {correct_vs(0.8, 0.5)}},
                                {"c", {failed(Outcome::wrong_output)}},
                                {"d", {correct_vs(2.5, 1.6)}}};
  EvalSummary summary = summarize_eval(ops, 1);
  ASSERT_EQ(fast_thresholds(), (std::vector<double>{0, 1, 1.5, 2}));
  EXPECT_EQ(summary.fast_p, (std::vector<double>{0.75, 0.5, 0.25, 0.25}));
  EXPECT_EQ(summary.fast_p_compile, (std::vector<double>{0.75, 0.25, 0.25, 0.0}));
  EXPECT_DOUBLE_EQ(summary.fast_1, 0.5);
  EXPECT_DOUBLE_EQ(summary.correct_rate, 0.75);
  EXPECT_EQ(threshold_key(1.5), "1.5");
  EXPECT_EQ(threshold_key(2.0), "2");
  EXPECT_EQ(per_op_metric(summary, "fast_1_vs_compile"), (std::map<std::string, double>{{"a", 0}, {"b", 0}, {"c", 0}, {"d", 1}}));
  EXPECT_EQ(per_op_metric(summary, "fast_1_5").at("d"), 1.0);
  EXPECT_TRUE(per_op_metric(summary, "no_such_metric").empty());
}

// Untimed evaluations (speedup 0) still have fast_0 = the correct rate, and no compile numbers.
TEST(SummarizeEval, FastZeroIsCorrectnessAndCompileIsAbsentWhenNotMeasured) {
  std::vector<OpSamples> ops = {{"a", {correct(0.0), correct(0.0, true)}}, {"b", {failed(Outcome::compile_error)}}};
  EvalSummary summary = summarize_eval(ops, 1);
  EXPECT_DOUBLE_EQ(summary.fast_p[0], 0.5);
  EXPECT_DOUBLE_EQ(summary.fast_p[1], 0.0);
  EXPECT_TRUE(summary.fast_p_compile.empty());
  EXPECT_EQ(summary.intervals.count("fast_1_vs_compile"), 0u);
  EXPECT_TRUE(per_op_metric(summary, "fast_1_vs_compile").empty());
}

TEST(SummarizeEval, RuleViolationRateIsTheMeanShareOverOps) {
  std::vector<OpSamples> ops = {
      {"a", {failed(Outcome::rule_violation), failed(Outcome::rule_violation), correct(1.1), failed(Outcome::format_error)}},
      {"b", {failed(Outcome::rule_violation), correct(1.1)}}};
  EvalSummary summary = summarize_eval(ops, 1);
  EXPECT_DOUBLE_EQ(summary.per_op[0].rule_violation_rate, 0.5);
  EXPECT_DOUBLE_EQ(summary.per_op[1].rule_violation_rate, 0.5);
  EXPECT_DOUBLE_EQ(summary.rule_violation_rate, 0.5);
}

// Intervals resample ops: three ops with pass@1 0, 0 and 1 give the exact bootstrap
// interval [0, 1] (see common/stats_test.cpp); every rate has one, and it brackets the value.
TEST(SummarizeEval, EveryRateHasASeededBootstrapIntervalOverOps) {
  std::vector<OpSamples> ops = {{"a", {failed(Outcome::wrong_output), failed(Outcome::wrong_output)}},
                                {"b", {failed(Outcome::timeout), failed(Outcome::compile_error)}},
                                {"c", {correct(1.4), correct(3.0)}}};
  EvalSummary summary = summarize_eval(ops, 2);
  for (const char* name : {"pass_at_1", "pass_at_k", "compile_rate", "rule_violation_rate", "fast_0", "fast_1",
                           "fast_1_5", "fast_2"}) {
    ASSERT_EQ(summary.intervals.count(name), 1u) << name;
  }
  EXPECT_NEAR(summary.intervals["pass_at_1"].estimate, 1.0 / 3, 1e-12);
  EXPECT_DOUBLE_EQ(summary.intervals["pass_at_1"].low, 0.0);
  EXPECT_DOUBLE_EQ(summary.intervals["pass_at_1"].high, 1.0);
  EXPECT_NEAR(summary.intervals["fast_1_5"].estimate, 1.0 / 6, 1e-12);
  EXPECT_EQ(summary.bootstrap.resamples, 10000);
  EvalSummary again = summarize_eval(ops, 2);
  EXPECT_EQ(again.intervals["fast_1_5"].high, summary.intervals["fast_1_5"].high) << "seeded: reproducible";
}
