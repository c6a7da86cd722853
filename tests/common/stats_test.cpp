// Bootstrap intervals against hand-worked cases: exact bootstrap distributions of tiny
// samples, the normal approximation on a large one, pairing, reproducibility.
// Run: ctest -R common_stats_test (or build/bin/common_stats_test).
#include "common/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

using kforge::stats::BootstrapOptions;
using kforge::stats::Interval;
using namespace kforge::stats;

TEST(Quantile, InterpolatesBetweenOrderStatisticsLikeNumpy) {
  // numpy.quantile([1, 2, 3, 4], 0.25) = 1.75; 0.5 = 2.5; ends are the extremes.
  EXPECT_DOUBLE_EQ(quantile({4, 1, 3, 2}, 0.25), 1.75);
  EXPECT_DOUBLE_EQ(quantile({4, 1, 3, 2}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(quantile({4, 1, 3, 2}, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(quantile({4, 1, 3, 2}, 1.0), 4.0);
  EXPECT_DOUBLE_EQ(quantile({7}, 0.975), 7.0);
  EXPECT_DOUBLE_EQ(quantile({}, 0.5), 0.0);
}

TEST(BootstrapMean, ConstantAndSingleValuesHaveNoWidth) {
  Interval constant = bootstrap_mean({0.25, 0.25, 0.25});
  EXPECT_DOUBLE_EQ(constant.estimate, 0.25);
  EXPECT_DOUBLE_EQ(constant.low, 0.25);
  EXPECT_DOUBLE_EQ(constant.high, 0.25);
  Interval single = bootstrap_mean({0.6});
  EXPECT_DOUBLE_EQ(single.low, 0.6);
  EXPECT_DOUBLE_EQ(single.high, 0.6);
  Interval empty = bootstrap_mean({});
  EXPECT_DOUBLE_EQ(empty.estimate, 0.0);
  EXPECT_DOUBLE_EQ(empty.high, 0.0);
}

// Three ops, one solved: a replicate's mean is K/3 with K ~ Binomial(3, 1/3), so
// P(0) = 8/27 = 0.296 > 0.025 and P(mean < 1) = 26/27 = 0.963 < 0.975: the exact 95%
// interval is [0, 1]. The 90% one is [0, 2/3] (0.963 > 0.95).
TEST(BootstrapMean, MatchesTheExactBootstrapDistributionOfATinySample) {
  Interval ci = bootstrap_mean({0, 0, 1});
  EXPECT_NEAR(ci.estimate, 1.0 / 3, 1e-12);
  EXPECT_DOUBLE_EQ(ci.low, 0.0);
  EXPECT_DOUBLE_EQ(ci.high, 1.0);
  Interval ci90 = bootstrap_mean({0, 0, 1}, {10000, 20240917, 0.90});
  EXPECT_DOUBLE_EQ(ci90.low, 0.0);
  EXPECT_NEAR(ci90.high, 2.0 / 3, 1e-12);
}

// 400 ops, 120 solved: the bootstrap of a mean approaches the normal interval
// 0.3 +- 1.96 * sqrt(0.3 * 0.7 / 400) = 0.3 +- 0.0449.
TEST(BootstrapMean, ApproachesTheNormalIntervalOnALargeSample) {
  std::vector<double> values(400, 0.0);
  for (int op_idx = 0; op_idx < 120; ++op_idx) values[op_idx] = 1.0;
  Interval ci = bootstrap_mean(values);
  double half_width = 1.96 * std::sqrt(0.3 * 0.7 / 400);
  EXPECT_DOUBLE_EQ(ci.estimate, 0.3);
  EXPECT_NEAR(ci.low, 0.3 - half_width, 0.006);
  EXPECT_NEAR(ci.high, 0.3 + half_width, 0.006);
}

TEST(BootstrapMean, IsReproducibleForASeedAndMovesWithAnother) {
  std::vector<double> values = {0.1, 0.9, 0.4, 0.0, 1.0, 0.25, 0.75, 0.5};
  Interval first = bootstrap_mean(values), again = bootstrap_mean(values);
  EXPECT_EQ(first.low, again.low);
  EXPECT_EQ(first.high, again.high);
  Interval other = bootstrap_mean(values, {10000, 7, 0.95});
  EXPECT_TRUE(other.low != first.low || other.high != first.high) << "the seed drives the resampling";
  EXPECT_NEAR(other.low, first.low, 0.05);
  EXPECT_THROW(bootstrap_mean(values, {0, 1, 0.95}), std::invalid_argument);
  EXPECT_THROW(bootstrap_mean(values, {100, 1, 1.0}), std::invalid_argument);
}

// Pairing: model B solves every op A solves plus 0.1 more of each. The two models'
// own intervals overlap (op difficulty varies widely), but the per-op difference is
// exactly 0.1 on every op, so its paired interval is [0.1, 0.1].
TEST(PairedBootstrap, CancelsOpDifficulty) {
  std::vector<double> before = {0.0, 0.9, 0.1, 0.8, 0.2, 0.7, 0.0, 0.9};
  std::vector<double> after;
  for (double value : before) after.push_back(value + 0.1);
  EXPECT_TRUE(intervals_overlap(bootstrap_mean(before), bootstrap_mean(after)));
  Interval difference = paired_bootstrap_difference(before, after);
  EXPECT_NEAR(difference.estimate, 0.1, 1e-12);
  EXPECT_NEAR(difference.low, 0.1, 1e-12);
  EXPECT_NEAR(difference.high, 0.1, 1e-12);
  // Two ops, differences +1 and -1: replicates are -1, 0, +1 with 1/4, 1/2, 1/4.
  Interval mixed = paired_bootstrap_difference({0, 1}, {1, 0});
  EXPECT_DOUBLE_EQ(mixed.estimate, 0.0);
  EXPECT_DOUBLE_EQ(mixed.low, -1.0);
  EXPECT_DOUBLE_EQ(mixed.high, 1.0);
  EXPECT_THROW(paired_bootstrap_difference({0, 1}, {1}), std::invalid_argument);
}

TEST(IntervalsOverlap, TouchingCountsAsOverlap) {
  EXPECT_TRUE(intervals_overlap({0, 0.1, 0.3}, {0, 0.3, 0.5}));
  EXPECT_FALSE(intervals_overlap({0, 0.1, 0.3}, {0, 0.31, 0.5}));
  EXPECT_TRUE(intervals_overlap({0, 0.2, 0.6}, {0, 0.3, 0.4}));
}

TEST(ComparePaired, MatchesOpsByNameAndReportsTheDifference) {
  std::vector<std::pair<std::string, double>> before = {{"relu", 0.0}, {"gelu", 0.5}, {"softmax", 1.0}, {"gone", 1.0}};
  std::map<std::string, double> after = {{"softmax", 1.0}, {"relu", 1.0}, {"gelu", 1.0}, {"new", 0.0}};
  PairedComparison cmp = compare_paired(before, after);
  ASSERT_EQ(cmp.tasks, 3);
  ASSERT_EQ(cmp.per_task.size(), 3u);
  EXPECT_EQ(cmp.per_task[0].name, "relu");
  EXPECT_DOUBLE_EQ(cmp.per_task[0].delta, 1.0);
  EXPECT_DOUBLE_EQ(cmp.per_task[1].delta, 0.5);
  EXPECT_DOUBLE_EQ(cmp.per_task[2].delta, 0.0);
  EXPECT_DOUBLE_EQ(cmp.before.estimate, 0.5);
  EXPECT_DOUBLE_EQ(cmp.after.estimate, 1.0);
  EXPECT_DOUBLE_EQ(cmp.difference.estimate, 0.5);
  // Deltas {1, 0.5, 0}: every replicate mean lies in [0, 1], and the before interval
  // ({0, 0.5, 1}) reaches 1 where the after interval ({1, 1, 1}) sits.
  EXPECT_GE(cmp.difference.low, 0.0);
  EXPECT_LE(cmp.difference.high, 1.0);
  EXPECT_DOUBLE_EQ(cmp.after.low, 1.0);
  EXPECT_TRUE(cmp.intervals_overlap);
  EXPECT_EQ(compare_paired({{"a", 1.0}}, {{"b", 1.0}}).tasks, 0);
}
