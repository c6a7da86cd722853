// Evaluation runner on a tiny policy with a synthetic checker: n samples per op,
// metrics consistent with the raw outcomes, reproducible from the seed, JSON shape.
// Run: ctest -R train_test
// (one binary: build/bin/train_test --gtest_filter='EvaluatePolicy*')
#include "worker/train/evaluate.h"

#include <gtest/gtest.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
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
  auto without_seconds = [](const EvalSummary& s) {  // wall times differ from run to run
    auto json = nlohmann::json::parse(eval_summary_to_json(s));
    json.erase("seconds");
    return json.dump();
  };
  EXPECT_EQ(without_seconds(again), without_seconds(summary));
  auto json = nlohmann::json::parse(eval_summary_to_json(summary));
  EXPECT_DOUBLE_EQ(json["seconds"]["time"].get<double>(), 0.0) << "no timing checker, no timing phase";
  EXPECT_EQ(json["per_op"].size(), 3u);
  EXPECT_DOUBLE_EQ(json["fast_0"].get<double>(), summary.correct_rate);

  config.samples_per_op = 0;
  EXPECT_THROW(evaluate_policy(policy, tasks, checker, config), std::invalid_argument);
}

namespace {

// Records the order of calls: verification of every sample must come before any timing.
class OrderChecker : public Checker {
 public:
  OrderChecker(std::atomic<int>& clock, bool timed) : clock_(clock), timed_(timed) {}
  CheckSummary check(const Task&, const std::string& text) override {
    int tick = clock_++;
    std::lock_guard<std::mutex> lock(mutex_);
    ticks.push_back(tick);
    texts.push_back(text);
    bool good = text.find('f') != std::string::npos;
    if (!good) return {Outcome::wrong_output, 0.0, false, false, "mismatch at [0]"};
    if (timed_) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return {Outcome::correct, timed_ ? 3.0 : 0.0, false, false, timed_ ? "timed" : "verified"};
  }
  std::vector<int> ticks;
  std::vector<std::string> texts;

 private:
  std::atomic<int>& clock_;
  bool timed_;
  std::mutex mutex_;
};

}  // namespace

TEST(EvaluatePolicy, SerialTimingTimesOnlyCorrectSamplesAfterAllVerification) {
  test::TinyBigramPolicy policy(9, 21);
  std::atomic<int> clock{0};
  OrderChecker verify(clock, false), timing(clock, true);
  std::vector<Task> tasks = {{"relu", "a", ""}, {"gelu", "b", ""}, {"softmax", "c", ""}};
  EvalConfig config;
  config.samples_per_op = 8;
  config.check_threads = 4;
  config.sampling.max_new_tokens = 6;
  config.timing_checker = &timing;
  std::vector<OpSamples> raw;
  EvalSummary summary = evaluate_policy(policy, tasks, verify, config, &raw);
  ASSERT_EQ(verify.ticks.size(), 24u);  // every sample verified once
  int correct = 0;
  for (const auto& op : raw)
    for (const auto& sample : op.samples) {
      correct += sample.outcome == Outcome::correct;
      // Correct samples carry the timed result; the rest keep the verifier's message and text.
      EXPECT_EQ(sample.message, sample.outcome == Outcome::correct ? "timed" : "mismatch at [0]");
      if (sample.outcome == Outcome::correct) EXPECT_DOUBLE_EQ(sample.speedup, 3.0);
      EXPECT_FALSE(sample.text.empty());
    }
  ASSERT_GT(correct, 0) << "the tiny policy should write an 'f' in some of 24 samples";
  ASSERT_LT(correct, 24) << "and miss it in others, or the test proves nothing";
  EXPECT_EQ(static_cast<int>(timing.ticks.size()), correct);
  int last_verify = *std::max_element(verify.ticks.begin(), verify.ticks.end());
  int first_timing = *std::min_element(timing.ticks.begin(), timing.ticks.end());
  EXPECT_LT(last_verify, first_timing) << "a timed check ran while samples were still being verified";
  for (const auto& text : timing.texts) EXPECT_NE(text.find('f'), std::string::npos);
  EXPECT_GT(summary.fast_2, 0.0);  // speedup 3 came from the timing checker
  // Where the evaluation's time went, per phase: the timed checks slept 5 ms each.
  auto json = nlohmann::json::parse(eval_summary_to_json(summary));
  EXPECT_GE(json["seconds"]["time"].get<double>(), 0.005 * correct);
  EXPECT_GE(json["seconds"]["sample"].get<double>(), 0.0);
  EXPECT_GE(json["seconds"]["check"].get<double>(), 0.0);
}
