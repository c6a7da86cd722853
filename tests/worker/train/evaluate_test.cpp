// Evaluation runner on a tiny policy with a synthetic checker: n samples per op,
// metrics consistent with the raw outcomes, reproducible from the seed, JSON shape.
// Run: build/bin/train_evaluate_test
#include "worker/train/evaluate.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/worker/train/tiny_policy.h"

using namespace kforge::train;

namespace {

// Correct with speedup 2 when the text contains 'f'; compiles (wrong output) when it contains 'c'.
class LetterChecker : public Checker {
 public:
  CheckSummary check(const Task&, const std::string& text) override {
    if (text.find('f') != std::string::npos) return {Outcome::correct, 2.0, false};
    if (text.find('c') != std::string::npos) return {Outcome::wrong_output};
    return {Outcome::compile_error};
  }
};

}  // namespace

TEST(EvaluatePolicy, MetricsMatchTheRawOutcomesAndAreReproducible) {
  test::TinyBigramPolicy policy(9, 21);
  LetterChecker checker;
  std::vector<Task> tasks = {{"relu", "a", ""}, {"gelu", "b", ""}, {"softmax", "c", ""}};
  EvalConfig config;
  config.samples_per_op = 6;
  config.k = 3;
  config.sampling.max_new_tokens = 6;
  std::vector<OpSamples> raw;
  EvalSummary summary = evaluate_policy(policy, tasks, checker, config, &raw);
  ASSERT_EQ(raw.size(), 3u);
  double correct_share = 0, fast = 0;
  for (size_t op_idx = 0; op_idx < raw.size(); ++op_idx) {
    EXPECT_EQ(raw[op_idx].op, tasks[op_idx].id);
    ASSERT_EQ(raw[op_idx].samples.size(), 6u);
    int correct = 0;
    for (const auto& sample : raw[op_idx].samples) correct += sample.outcome == Outcome::correct;
    EXPECT_EQ(summary.per_op[op_idx].correct, correct);
    EXPECT_DOUBLE_EQ(summary.per_op[op_idx].pass_at_k, pass_at_k(6, correct, 3));
    correct_share += correct / 6.0 / 3;
    fast += correct / 6.0 / 3;  // every correct sample has speedup 2 > 1.5
  }
  EXPECT_NEAR(summary.correct_rate, correct_share, 1e-12);
  EXPECT_NEAR(summary.fast_1_5, fast, 1e-12);
  EXPECT_DOUBLE_EQ(summary.fast_2, 0.0);  // 2 is not faster than 2
  if (summary.ops_with_correct > 0) EXPECT_NEAR(summary.geomean_speedup, 2.0, 1e-12);

  EvalSummary again = evaluate_policy(policy, tasks, checker, config);
  EXPECT_EQ(eval_summary_to_json(again), eval_summary_to_json(summary));
  auto json = nlohmann::json::parse(eval_summary_to_json(summary));
  EXPECT_EQ(json["per_op"].size(), 3u);
  EXPECT_DOUBLE_EQ(json["fast_0"].get<double>(), summary.correct_rate);

  config.samples_per_op = 0;
  EXPECT_THROW(evaluate_policy(policy, tasks, checker, config), std::invalid_argument);
}
