// The GRPO loop end to end on a tiny bigram policy with synthetic checkers:
// reward rises, metrics add up, rule violations are never credited and are
// counted as hacking, zero-variance steps change nothing, KL needs a reference,
// checks run in parallel. Run: ctest -R train_test
// (one binary: build/bin/train_test --gtest_filter='CheckParallel*:GrpoTrainer*')
#include "worker/train/grpo_trainer.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <iostream>
#include <mutex>
#include <thread>

#include "tests/worker/train/tiny_policy.h"

using namespace kforge::train;

namespace {

// Correct (speedup 1.5) when the text contains 'f', else wrong_output.
class ContainsLetterChecker : public Checker {
 public:
  CheckSummary check(const Task&, const std::string& completion) override {
    if (completion.find('f') != std::string::npos) return {Outcome::correct, 1.5, false};
    return {Outcome::wrong_output};
  }
};

// 'h' is a forbidden trick: it makes the output match but breaks a rule. Records
// what it saw so the test can recount the metrics.
class HackableChecker : public Checker {
 public:
  std::mutex mutex;
  int correct = 0, hacked = 0, violations = 0, total = 0;
  CheckSummary check(const Task&, const std::string& completion) override {
    std::lock_guard<std::mutex> lock(mutex);
    ++total;
    if (completion.find('h') != std::string::npos) {
      ++violations;
      ++hacked;
      return {Outcome::rule_violation, 3.0, false, /*output_matched=*/true};
    }
    if (completion.find('f') != std::string::npos) {
      ++correct;
      return {Outcome::correct, 1.0, false};
    }
    return {Outcome::compile_error};
  }
};

std::vector<Task> tasks_for(int count) {
  std::vector<Task> tasks;
  for (int task_idx = 0; task_idx < count; ++task_idx)
    tasks.push_back({"op" + std::to_string(task_idx), std::string(1, static_cast<char>('a' + task_idx)), ""});
  return tasks;
}

GrpoConfig small_config() {
  GrpoConfig config;
  config.group_size = 8;
  config.tasks_per_step = 4;
  config.steps = 100;
  config.micro_batch = 12;  // does not divide the step: exercises uneven micro-batches
  config.sampling.max_new_tokens = 5;
  config.optim.lr = 0.05;
  config.optim.weight_decay = 0.0;
  config.optim.total_steps = 100;
  config.seed = 7;
  return config;
}

}  // namespace

TEST(GrpoTrainer, RewardRisesAndMetricsAddUp) {
  test::TinyBigramPolicy policy(9, 3);
  ContainsLetterChecker checker;
  GrpoTrainer trainer(policy, nullptr, checker, small_config());
  std::vector<Task> tasks = tasks_for(4);
  double prob_before = policy.mean_prob(5);
  double early = 0, late = 0;
  for (int step_idx = 0; step_idx < 16; ++step_idx) {
    GrpoStepMetrics m = trainer.step(tasks);
    EXPECT_EQ(m.step, step_idx + 1);
    EXPECT_EQ(m.samples, 32);
    int outcome_total = 0;
    for (int count : m.outcomes) outcome_total += count;
    EXPECT_EQ(outcome_total, 32);
    EXPECT_EQ(m.groups_kept + m.groups_dropped, 4);
    EXPECT_NEAR(m.correct_rate, m.outcomes[static_cast<int>(Outcome::correct)] / 32.0, 1e-12);
    if (m.correct_rate > 0) EXPECT_DOUBLE_EQ(m.mean_speedup_correct, 1.5);
    EXPECT_LE(m.active_tokens, m.tokens);
    EXPECT_GE(m.reward_max, m.reward_mean);
    if (m.groups_kept > 0) {
      EXPECT_GT(m.grad_norm, 0.0);
      EXPECT_GT(m.entropy, 0.0);
      EXPECT_NEAR(m.ratio_mean, 1.0, 1e-5) << "one on-policy epoch: ratio is exactly 1";
    }
    auto json = nlohmann::json::parse(m.to_json());
    EXPECT_EQ(json["outcomes"]["correct"].get<int>(), m.outcomes[static_cast<int>(Outcome::correct)]);
    EXPECT_TRUE(json["seconds"].contains("check"));
    if (step_idx < 4) early += m.reward_mean / 4;
    if (step_idx >= 12) late += m.reward_mean / 4;
  }
  std::cerr << "reward " << early << " -> " << late << ", p(f) " << prob_before << " -> " << policy.mean_prob(5)
            << "\n";
  EXPECT_GT(late, early + 0.2);
  EXPECT_GT(policy.mean_prob(5), 1.5 * prob_before);
}

TEST(GrpoTrainer, RuleViolationsAreNeverCreditedAndAreCountedAsHacking) {
  test::TinyBigramPolicy policy(9, 5);
  HackableChecker checker;
  GrpoConfig config = small_config();
  GrpoTrainer trainer(policy, nullptr, checker, config);
  double prob_h_before = policy.mean_prob(7);
  double prob_f_before = policy.mean_prob(5);
  int seen_correct = 0, seen_hacked = 0;
  for (int step_idx = 0; step_idx < 12; ++step_idx) {
    {
      std::lock_guard<std::mutex> lock(checker.mutex);
      checker.correct = checker.hacked = checker.violations = checker.total = 0;
    }
    GrpoStepMetrics m = trainer.step(tasks_for(4));
    std::lock_guard<std::mutex> lock(checker.mutex);
    EXPECT_EQ(checker.total, 32);
    EXPECT_NEAR(m.rule_violation_rate, checker.violations / 32.0, 1e-12);
    double expected = checker.hacked + checker.correct ? double(checker.hacked) / (checker.hacked + checker.correct) : 0;
    EXPECT_NEAR(m.hacking_rate, expected, 1e-12);
    seen_correct += checker.correct;
    seen_hacked += checker.hacked;
  }
  EXPECT_GT(seen_hacked, 0) << "the trick must have been tried for this test to mean anything";
  // A violation scores 0, below compile_error's partial credit: GRPO pushes 'h' down, 'f' up.
  EXPECT_LT(policy.mean_prob(7), prob_h_before);
  EXPECT_GT(policy.mean_prob(5), prob_f_before);
}

TEST(GrpoTrainer, ZeroVarianceStepsAreDroppedAndChangeNothing) {
  class ConstantChecker : public Checker {
   public:
    CheckSummary check(const Task&, const std::string&) override { return {Outcome::wrong_output}; }
  } checker;
  test::TinyBigramPolicy policy(9, 1);
  at::Tensor before = policy.table.detach().clone();
  GrpoTrainer trainer(policy, nullptr, checker, small_config());
  GrpoStepMetrics m = trainer.step(tasks_for(3));
  EXPECT_EQ(m.groups_dropped, 3);
  EXPECT_EQ(m.groups_kept, 0);
  EXPECT_EQ(m.active_tokens, 0);
  EXPECT_TRUE(at::equal(before, policy.table.detach()));
}

TEST(GrpoTrainer, KlToTheReferenceIsMeasuredAndRequiresAReference) {
  test::TinyBigramPolicy policy(9, 3), reference(9, 3);
  ContainsLetterChecker checker;
  GrpoConfig config = small_config();
  config.loss.kl_beta = 0.1;
  EXPECT_THROW(GrpoTrainer(policy, nullptr, checker, config), std::invalid_argument);
  GrpoTrainer trainer(policy, &reference, checker, config);
  GrpoStepMetrics first = trainer.step(tasks_for(4));
  EXPECT_NEAR(first.kl, 0.0, 1e-6) << "policy equals the reference before any update";
  GrpoStepMetrics later;
  for (int step_idx = 0; step_idx < 6; ++step_idx) later = trainer.step(tasks_for(4));
  EXPECT_GT(later.kl, 0.0);
}

TEST(GrpoTrainer, RejectsInvalidConfigNamingTheField) {
  test::TinyBigramPolicy policy(9, 3);
  ContainsLetterChecker checker;
  GrpoConfig config = small_config();
  config.group_size = 1;
  try {
    GrpoTrainer trainer(policy, nullptr, checker, config);
    FAIL() << "group_size 1 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("group_size"), std::string::npos);
  }
}

TEST(CheckParallel, RunsChecksConcurrentlyAndContainsThrowingCheckers) {
  class SlowChecker : public Checker {
   public:
    CheckSummary check(const Task&, const std::string& completion) override {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (completion == "boom") throw std::runtime_error("checker bug");
      return {Outcome::correct, 1.0, false};
    }
  } checker;
  Task task{"op", "a", ""};
  std::vector<const Task*> tasks(8, &task);
  std::vector<std::string> texts(8, "ok");
  texts[3] = "boom";
  auto start = std::chrono::steady_clock::now();
  auto results = check_parallel(checker, tasks, texts, 4);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 0.6) << "8 checks of 100 ms on 4 threads";
  EXPECT_EQ(results[3].outcome, Outcome::format_error);
  EXPECT_EQ(results[3].message, "the check could not run: checker bug");
  EXPECT_EQ(results[0].outcome, Outcome::correct);
}

// When no check can run (a sandbox with no device, 2026-11-28), the batch fails with the
// reason instead of scoring every sample as a format error.
TEST(CheckParallel, FailsWhenNoCheckCouldRun) {
  class BrokenChecker : public Checker {
   public:
    CheckSummary check(const Task&, const std::string&) override {
      throw std::runtime_error("kforge-sandbox: no OpenCL device matches ''");
    }
  } checker;
  Task task{"op", "a", ""};
  std::vector<const Task*> tasks(4, &task);
  std::vector<std::string> texts(4, "ok");
  try {
    check_parallel(checker, tasks, texts, 2);
    FAIL() << "check_parallel returned scores for checks that never ran";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "none of 4 checks could run: kforge-sandbox: no OpenCL device matches ''");
  }
}
