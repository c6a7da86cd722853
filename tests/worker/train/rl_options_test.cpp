// Issue 17's training options on a tiny bigram policy and synthetic checkers: leave-one-out
// advantages, the speed bonus ranked among correct samples, the per-step hacking watch
// (re-checks with fresh secret seeds), the pass-rate curriculum, expert iteration (rft), and
// the SFT dataset refusing held-out ops and finding them in data files. Run: ctest -R train_test
// (build/bin/train_test --gtest_filter='Loo*:SpeedAmongCorrect*:HackingWatch*:Curriculum*:Rft*:Dataset*'); a resumed rft run keeps its pool
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <fstream>
#include <mutex>
#include <set>

#include "tests/worker/train/tiny_policy.h"
#include "worker/train/curriculum.h"
#include "worker/train/dataset.h"
#include "worker/train/grpo_trainer.h"
#include "worker/train/prompt_template.h"
#include "worker/train/rft.h"
#include "worker/train/suite_tasks.h"

using namespace kforge::train;

namespace {

// Correct (speedup 1.5) when the text contains 'f', else wrong_output.
class LetterChecker : public Checker {
 public:
  std::atomic<int> rechecks{0};
  std::set<uint64_t> seeds;
  std::mutex mutex;
  bool fail_rechecks = false;
  CheckSummary check(const Task&, const std::string& completion) override {
    if (completion.find('f') != std::string::npos) return {Outcome::correct, 1.5, false};
    return {Outcome::wrong_output};
  }
  CheckSummary recheck(const Task& task, const std::string& completion, uint64_t seed) override {
    ++rechecks;
    std::lock_guard<std::mutex> lock(mutex);
    seeds.insert(seed);
    return fail_rechecks ? CheckSummary{Outcome::wrong_output} : check(task, completion);
  }
};

std::vector<Task> letter_tasks(int count) {
  std::vector<Task> tasks;
  for (int task_idx = 0; task_idx < count; ++task_idx)
    tasks.push_back({"op" + std::to_string(task_idx), std::string(1, static_cast<char>('a' + task_idx)), ""});
  return tasks;
}

GrpoConfig grpo_small() {
  GrpoConfig config;
  config.group_size = 8;
  config.tasks_per_step = 2;
  config.steps = 10;
  config.sampling.max_new_tokens = 5;
  config.optim.lr = 0.05;
  config.optim.total_steps = 10;
  config.seed = 3;
  return config;
}

// Share of `samples` samples per task whose text contains 'f'.
double f_rate(TrainablePolicy& policy, const std::vector<Task>& tasks, int samples, uint64_t seed) {
  SamplingConfig sampling;
  sampling.max_new_tokens = 5;
  int hits = 0, total = 0;
  for (const auto& task : tasks)
    for (const auto& completion : policy.sample(policy.encode(task.prompt), samples, sampling, seed)) {
      hits += completion.text.find('f') != std::string::npos;
      ++total;
    }
  return static_cast<double>(hits) / total;
}

}  // namespace

TEST(LooAdvantages, SubtractTheMeanOfTheOtherSamples) {
  std::vector<double> rewards = {1.0, 0.0, 0.0, 0.5, 2.0, 2.0, 2.0, 2.0};
  auto loo = group_advantages(rewards, 4, /*scale_by_std=*/false, 1e-6, 1e-9, Baseline::leave_one_out);
  // Group 1: r_0 - mean(0, 0, 0.5) = 1 - 1/6; r_3 - mean(1, 0, 0) = 0.5 - 1/3.
  EXPECT_NEAR(loo.advantages[0], 1.0 - 0.5 / 3, 1e-12);
  EXPECT_NEAR(loo.advantages[1], 0.0 - 1.5 / 3, 1e-12);
  EXPECT_NEAR(loo.advantages[3], 0.5 - 1.0 / 3, 1e-12);
  EXPECT_EQ(loo.groups_kept, 1);
  EXPECT_EQ(loo.groups_dropped, 1) << "a zero-variance group is dropped with either baseline";
  EXPECT_FALSE(loo.keep[5]);
  // G/(G-1) times the group-mean advantage, also when std-scaled.
  auto mean = group_advantages(rewards, 4, true);
  auto loo_std = group_advantages(rewards, 4, true, 1e-6, 1e-9, Baseline::leave_one_out);
  for (int idx = 0; idx < 4; ++idx) EXPECT_NEAR(loo_std.advantages[idx], mean.advantages[idx] * 4.0 / 3.0, 1e-9);
  EXPECT_THROW(group_advantages({1.0}, 1, false, 1e-6, 1e-9, Baseline::leave_one_out), std::invalid_argument);
}

TEST(SpeedAmongCorrect, RanksCorrectSamplesOnlyAndKeepsTheCorrectnessStepFixed) {
  RewardConfig config;  // w 0.5, cap 3
  std::vector<CheckSummary> checks = {
      {Outcome::correct, 1.0}, {Outcome::correct, 2.0}, {Outcome::correct, 9.0}, {Outcome::wrong_output},
      {Outcome::correct, 50.0, /*suspicious=*/true},  // group 2: a flagged speedup earns no bonus
      {Outcome::correct, 4.0}, {Outcome::compile_error}, {Outcome::format_error}};
  auto absolute = group_rewards(checks, 4, config, SpeedBonus::absolute);
  EXPECT_DOUBLE_EQ(absolute[0], 1.5);
  EXPECT_DOUBLE_EQ(absolute[2], 2.5);  // capped at 3
  auto ranked = group_rewards(checks, 4, config, SpeedBonus::among_correct);
  EXPECT_DOUBLE_EQ(ranked[0], 1.0) << "the slowest correct sample gets no bonus";
  EXPECT_DOUBLE_EQ(ranked[1], 1.25) << "(2 - 1) / (3 - 1) of w";
  EXPECT_DOUBLE_EQ(ranked[2], 1.5) << "the fastest (capped) gets w";
  EXPECT_DOUBLE_EQ(ranked[3], config.wrong_output);
  EXPECT_DOUBLE_EQ(ranked[4], 1.0) << "suspicious: correctness only";
  EXPECT_DOUBLE_EQ(ranked[5], 1.0) << "the only trusted correct sample of its group has nothing to beat";
  EXPECT_DOUBLE_EQ(ranked[6], config.compile_error);
}

TEST(HackingWatch, ReChecksCorrectKernelsWithFreshSecretSeedsEachStep) {
  test::TinyBigramPolicy policy(9, 1);
  LetterChecker checker;
  GrpoConfig config = grpo_small();
  config.recheck_per_step = 3;
  GrpoTrainer trainer(policy, nullptr, checker, config);
  int rechecked = 0;
  for (int step = 0; step < 4; ++step) {
    GrpoStepMetrics m = trainer.step(letter_tasks(2));
    int correct = m.outcomes[static_cast<int>(Outcome::correct)];
    EXPECT_EQ(m.rechecked, std::min(3, correct));
    EXPECT_EQ(m.recheck_failed, 0);
    rechecked += m.rechecked;
    auto json = nlohmann::json::parse(m.to_json());
    EXPECT_EQ(json["rechecked"], m.rechecked);
    EXPECT_EQ(json["rules_caught"], 0);
  }
  ASSERT_GT(rechecked, 0) << "some samples contain 'f' at random";
  EXPECT_EQ(checker.rechecks.load(), rechecked);
  EXPECT_EQ(static_cast<int>(checker.seeds.size()), rechecked) << "every re-check gets its own seed";
  // A kernel that is right only on the inputs it was checked with shows up as a failed re-check.
  checker.fail_rechecks = true;
  GrpoStepMetrics m;
  for (int step = 0; step < 5 && m.rechecked == 0; ++step) m = trainer.step(letter_tasks(2));
  ASSERT_GT(m.rechecked, 0);
  EXPECT_EQ(m.recheck_failed, m.rechecked);
  EXPECT_DOUBLE_EQ(m.recheck_fail_rate, 1.0);
}

TEST(Curriculum, KeepsOnlyTasksSolvedSometimesAndFallsBackToAll) {
  std::vector<Task> tasks = letter_tasks(5);
  TaskSchedule schedule(tasks, 9);
  EXPECT_EQ(schedule.active(), 5u);
  auto stats = schedule.set_pass_rates({{"op0", 8, 0}, {"op1", 8, 3}, {"op2", 8, 8}, {"op3", 8, 1}, {"op4", 0, 0}});
  EXPECT_EQ(stats.measured, 4);
  EXPECT_EQ(stats.learnable, 2);
  EXPECT_EQ(stats.never_solved, 1);
  EXPECT_EQ(stats.always_solved, 1);
  EXPECT_NEAR(stats.mean_pass1, (0 + 3.0 / 8 + 1 + 1.0 / 8) / 4, 1e-12);
  EXPECT_FALSE(stats.fallback);
  std::set<std::string> drawn;
  for (int step = 1; step <= 6; ++step)
    for (const auto& task : schedule.batch(step, 3)) drawn.insert(task.id);
  EXPECT_EQ(drawn, (std::set<std::string>{"op1", "op3"}));
  EXPECT_EQ(schedule.batch(4, 3)[0].id, schedule.batch(4, 3)[0].id) << "step s always draws the same batch";
  auto none = schedule.set_pass_rates({{"op0", 8, 0}, {"op1", 8, 8}});
  EXPECT_TRUE(none.fallback);
  EXPECT_EQ(schedule.active(), 5u);
}

TEST(Curriculum, MeasuresPassRatesBySamplingAndRefreshesEveryNSteps) {
  test::TinyBigramPolicy policy(9, 2);
  LetterChecker checker;
  std::vector<Task> tasks = letter_tasks(4);
  SamplingConfig sampling;
  sampling.max_new_tokens = 5;
  auto rates = measure_pass_rates(policy, checker, tasks, 16, sampling, 5, 2);
  ASSERT_EQ(rates.size(), 4u);
  for (size_t task_idx = 0; task_idx < rates.size(); ++task_idx) {
    EXPECT_EQ(rates[task_idx].id, tasks[task_idx].id);
    EXPECT_EQ(rates[task_idx].samples, 16);
  }
  // The same samples through the policy directly give the same counts.
  int correct0 = 0;
  for (const auto& c : policy.sample(policy.encode(tasks[0].prompt), 16, sampling, 5)) correct0 += c.text.find('f') != std::string::npos;
  EXPECT_EQ(rates[0].correct, correct0);
  TaskSchedule schedule(tasks, 1);
  EXPECT_TRUE(refresh_curriculum(schedule, policy, checker, sampling, 2, 0, 3, 4, 1).has_value());
  EXPECT_FALSE(refresh_curriculum(schedule, policy, checker, sampling, 2, 0, 3, 4, 2).has_value());
  EXPECT_TRUE(refresh_curriculum(schedule, policy, checker, sampling, 2, 0, 3, 4, 4).has_value());
  EXPECT_FALSE(refresh_curriculum(schedule, policy, checker, sampling, 2, 0, 0, 4, 1).has_value()) << "0 = off";
}

TEST(Rft, KeepsOnlyVerifiedDistinctKernelsAndRaisesTheirRate) {
  test::TinyBigramPolicy policy(9, 4);
  LetterChecker checker;
  RftConfig config;
  config.rounds = 4;
  config.samples_per_task = 16;
  config.max_kept_per_task = 6;
  config.sampling.max_new_tokens = 5;
  config.sft.max_steps = 30;
  config.sft.batch_size = 8;
  config.sft.micro_batch = 8;
  config.sft.max_tokens = 64;
  config.sft.optim.lr = 0.05;
  config.sft.optim.weight_decay = 0;
  std::vector<Task> tasks = letter_tasks(3);
  double before = f_rate(policy, tasks, 64, 99);
  RftTrainer trainer(policy, checker, config);
  int pool = 0;
  for (int round = 1; round <= config.rounds; ++round) {
    RftRoundMetrics m = trainer.round(tasks);
    EXPECT_EQ(m.round, round);
    EXPECT_EQ(m.samples, 48);
    EXPECT_LE(m.kept_new, 3 * config.max_kept_per_task);
    EXPECT_EQ(m.pool_size, pool + m.kept_new);
    pool = m.pool_size;
    if (m.pool_size > 0) EXPECT_EQ(m.sft_steps, 30);
    EXPECT_EQ(nlohmann::json::parse(m.to_json())["pool_size"], m.pool_size);
  }
  std::set<std::pair<std::string, std::string>> distinct;
  for (const auto& example : trainer.pool()) {
    EXPECT_NE(example.completion.find('f'), std::string::npos) << "only verified kernels are kept: " << example.completion;
    distinct.emplace(example.prompt, example.completion);
  }
  EXPECT_EQ(distinct.size(), trainer.pool().size()) << "no kernel is kept twice";
  double after = f_rate(policy, tasks, 64, 99);
  EXPECT_GT(after, before + 0.2) << "fine-tuning on verified samples makes them likelier (" << before << " -> " << after
                                 << ")";
  RftConfig bad = config;
  bad.sft.max_steps = 0;
  EXPECT_THROW(RftTrainer(policy, checker, bad), std::invalid_argument);
}

TEST(Dataset, RefusesHeldOutOps) {
  SuiteOp op;
  op.spec.name = "mish";
  op.split = "heldout";
  try {
    build_sft_dataset({op}, DatasetOptions{});
    FAIL() << "a held-out op reached the dataset builder";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("held-out"), std::string::npos) << e.what();
  }
}

TEST(Dataset, RefusesHeldOutOpsWhenInductorKernelsAreAskedFor) {
  SuiteOp op;
  op.spec.name = "mish";
  op.split = "heldout";
  DatasetOptions options;
  options.targets = {"triton"};
  options.inductor = true;
  EXPECT_THROW(build_sft_dataset({op}, options), std::invalid_argument)
      << "Inductor's kernels are one more data source: the held-out split stays out of it too";
}

TEST(Dataset, InductorRecordsCarryTheirGeneratorAndProvenance) {
  DatasetRecord teacher{"silu_mul", "pointwise.v4", "triton", "prompt", "kernel", 1.5};
  DatasetRecord inductor{"silu_mul", "inductor", "triton", "prompt", "module", 1.7};
  inductor.generator = "inductor";
  inductor.provenance = R"({"torch_version": "2.11.0", "triton_version": "3.6.0", "inductor_config": {"dynamic": true}})";
  std::string path = ::testing::TempDir() + "inductor_dataset.jsonl";
  write_dataset_jsonl(path, {teacher, inductor});
  std::ifstream in(path);
  std::string line;
  std::vector<nlohmann::json> lines;
  while (std::getline(in, line)) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["generator"], "teacher");
  EXPECT_FALSE(lines[0].contains("provenance"));
  EXPECT_EQ(lines[1]["generator"], "inductor");
  EXPECT_EQ(lines[1]["provenance"]["torch_version"], "2.11.0");
  EXPECT_EQ(lines[1]["provenance"]["inductor_config"]["dynamic"], true);
}

TEST(Dataset, HeldOutOpsInADataFileAreFoundAndTheTrainSplitHasNone) {
  auto heldout = load_suite(std::string(KFORGE_SOURCE_DIR) + "/suite", "heldout");
  auto train = load_suite(std::string(KFORGE_SOURCE_DIR) + "/suite", "train");
  ASSERT_FALSE(heldout.empty());
  const SuiteOp* add_bcast = nullptr;
  for (const auto& op : heldout) add_bcast = op.spec.name == "add_bcast_3d" ? &op : add_bcast;
  ASSERT_NE(add_bcast, nullptr);
  // Every train op's prompt, in both styles and every target: no held-out op among them,
  // although train's add has held-out add_bcast_3d's source (other shapes).
  std::vector<SftExample> pairs;
  for (const auto& op : train)
    for (auto style : {PromptStyle::kforge_tiny, PromptStyle::chatml})
      for (const char* target : {"opencl", "triton"}) pairs.push_back({render_prompt(prompt_op(op.spec, target), style), "k"});
  EXPECT_TRUE(heldout_leaks(pairs, heldout).empty());
  // A held-out op renamed, reindented and in ChatML is still found.
  PromptOp renamed = prompt_op(add_bcast->spec, "triton");
  renamed.name = "plus_three_d";
  std::string prompt = render_prompt(renamed, PromptStyle::chatml);
  size_t body = prompt.find("    return");
  ASSERT_NE(body, std::string::npos);
  prompt.replace(body, 4, "  ");
  pairs.push_back({prompt, "k"});
  EXPECT_EQ(heldout_leaks(pairs, heldout), (std::vector<std::string>{"add_bcast_3d"}));
  EXPECT_TRUE(heldout_leaks({{"no template here", "k"}}, heldout).empty());
}

TEST(Rft, RestoredPoolIsKeptAndNotKeptTwice) {
  test::TinyBigramPolicy policy(9, 4);
  LetterChecker checker;
  RftConfig config;
  config.rounds = 3;
  config.samples_per_task = 16;
  config.max_kept_per_task = 16;
  config.sampling.max_new_tokens = 5;
  config.sft.max_steps = 1;
  config.sft.batch_size = 4;
  config.sft.micro_batch = 4;
  config.sft.max_tokens = 64;
  config.sft.optim.lr = 1e-6;  // the policy barely moves: round 2 samples what round 1 did
  std::vector<Task> tasks = letter_tasks(2);
  RftTrainer first(policy, checker, config);
  RftRoundMetrics one = first.round(tasks);
  ASSERT_GT(one.pool_size, 0) << "some samples contain 'f' at random";
  // A resumed job: a new trainer restored from round 1's pool (kept.jsonl) goes on with round 2.
  RftTrainer resumed(policy, checker, config);
  resumed.restore(1, first.pool());
  RftRoundMetrics two = resumed.round(tasks);
  EXPECT_EQ(two.round, 2);
  EXPECT_EQ(two.pool_size, one.pool_size + two.kept_new) << "the restored pool is trained on and grows";
  std::set<std::pair<std::string, std::string>> distinct;
  for (const auto& example : resumed.pool()) distinct.emplace(example.prompt, example.completion);
  EXPECT_EQ(distinct.size(), resumed.pool().size()) << "a kernel found again after a resume is not kept twice";
}
