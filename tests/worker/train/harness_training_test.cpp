// The trainers against the real kernel harness (PoCL) and teacher compiler on a
// small op: the dataset builder keeps verified teacher kernels, HarnessChecker maps
// outcomes and runs in parallel, and a CPU SFT -> GRPO -> evaluation pipeline runs
// end to end; shrunk index ranges follow their table, and an op whose reference fails is
// skipped and named. Run: build/bin/train_harness_test (label slow; skips without OpenCL).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <unistd.h>
#include <iostream>
#include <set>

#include "worker/harness/devices.h"
#include "worker/train/dataset.h"
#include "worker/train/evaluate.h"
#include "worker/train/grpo_trainer.h"
#include "worker/train/model_policy.h"
#include "worker/train/sft_trainer.h"
#include "worker/train/suite_tasks.h"

using namespace kforge::train;

namespace {

const char* kReluJson = R"({"name": "relu_small",
  "source": "def forward(x: Tensor) -> Tensor:\n    return torch.relu(x)\n",
  "inputs": [{"name": "x", "shape": [256, 64], "dtype": "float32", "dist": "normal"}],
  "extra_shapes": [{"x": [7, 33]}],
  "tolerance": {"atol": 1e-5, "rtol": 1e-5}})";

SuiteOp relu_op() {
  auto parsed = kforge::spec::parse_op_spec(kReluJson);
  EXPECT_TRUE(parsed.ok()) << kforge::spec::describe_errors(parsed.errors);
  return {parsed.spec, "train", 1, "elementwise", kReluJson};
}

kforge::harness::CheckOptions fast_checks() {
  kforge::harness::CheckOptions options;
  options.trials = 1;
  options.time = false;
  return options;
}

// One verified teacher kernel per op.
DatasetOptions one_variant() {
  DatasetOptions options;
  options.max_variants_per_op = 1;
  options.check = fast_checks();
  return options;
}

#define REQUIRE_OPENCL()                                                               \
  do {                                                                                 \
    if (kforge::harness::list_devices().empty()) GTEST_SKIP() << "no OpenCL device"; \
  } while (0)

}  // namespace

TEST(HarnessTraining, DatasetKeepsVerifiedTeacherKernels) {
  REQUIRE_OPENCL();
  DatasetOptions options;
  options.max_variants_per_op = 2;
  options.check = fast_checks();
  DatasetStats stats;
  auto records = build_sft_dataset({relu_op()}, options, &stats);
  EXPECT_EQ(stats.ops, 1);
  EXPECT_EQ(stats.variants_checked, 2);
  EXPECT_EQ(stats.variants_correct, static_cast<int>(records.size()));
  ASSERT_GE(records.size(), 1u);
  EXPECT_EQ(records[0].prompt.rfind("### op relu_small\n", 0), 0u);
  EXPECT_NE(records[0].completion.find("// kforge-launch:"), std::string::npos);
  EXPECT_NE(records[0].schedule, "");
}

// Checking on shrunk shapes (--max-check-elements): an index input drawn from [0, rows)
// shrinks with the rows it indexes, so the suite's embedding (randint [0, 32000) into a
// 32000-row table) still has a reference; it failed with "index out of range" and, before
// that was fixed, took the whole dataset run down with it. An op whose reference does fail
// is skipped and named, and the other ops still give their pairs.
TEST(HarnessTraining, ShrunkIndexRangesFollowTheirTableAndABrokenOpIsSkipped) {
  REQUIRE_OPENCL();
  std::vector<SuiteOp> suite = load_suite(KFORGE_SOURCE_DIR "/suite", "train");
  auto embedding = std::find_if(suite.begin(), suite.end(), [](const SuiteOp& op) { return op.spec.name == "embedding"; });
  ASSERT_NE(embedding, suite.end());
  kforge::spec::OpSpec shrunk = shrink_for_checking(embedding->spec, 65536);
  ASSERT_EQ(shrunk.inputs[0].name, "w");
  ASSERT_EQ(shrunk.inputs[1].name, "idx");
  EXPECT_LT(shrunk.inputs[0].shape[0], 32000) << "the table shrinks";
  EXPECT_DOUBLE_EQ(shrunk.inputs[1].dist.b, static_cast<double>(shrunk.inputs[0].shape[0])) << "and the index range with it";
  EXPECT_DOUBLE_EQ(shrink_for_checking(embedding->spec, 0).inputs[1].dist.b, 32000) << "unshrunk: unchanged";

  // Indices up to 500 into a 100-row table: the teacher lowers it, the reference fails.
  const char* broken_json = R"({"name": "embedding_broken",
    "source": "def forward(w: Tensor, idx: Tensor) -> Tensor:\n    return torch.embedding(w, idx)\n",
    "inputs": [{"name": "w", "shape": [100, 8], "dtype": "float32", "dist": "normal"},
               {"name": "idx", "shape": [4, 16], "dtype": "int64", "dist": {"randint": [0, 500]}}],
    "tolerance": {"atol": 1e-5, "rtol": 1e-5}})";
  auto parsed = kforge::spec::parse_op_spec(broken_json);
  ASSERT_TRUE(parsed.ok()) << kforge::spec::describe_errors(parsed.errors);
  SuiteOp broken{parsed.spec, "train", 1, "movement", broken_json};
  DatasetOptions options;
  options.max_variants_per_op = 1;
  options.check = fast_checks();
  options.max_check_elements = 65536;
  DatasetStats stats;
  auto records = build_sft_dataset({*embedding, broken, relu_op()}, options, &stats);
  EXPECT_EQ(stats.ops, 3);
  ASSERT_EQ(stats.ops_failed.size(), 1u);
  EXPECT_EQ(stats.ops_failed[0].rfind("embedding_broken: ", 0), 0u) << stats.ops_failed[0];
  std::set<std::string> with_pairs;
  for (const auto& record : records) with_pairs.insert(record.op);
  EXPECT_EQ(with_pairs, (std::set<std::string>{"embedding", "relu_small"}));
}

TEST(HarnessTraining, HarnessCheckerMapsOutcomesAndRunsInParallel) {
  REQUIRE_OPENCL();
  auto records = build_sft_dataset({relu_op()}, one_variant());
  ASSERT_EQ(records.size(), 1u);
  HarnessChecker checker(fast_checks());
  Task task{"relu_small", records[0].prompt, kReluJson};
  EXPECT_EQ(checker.check(task, "this is not a kernel").outcome, Outcome::format_error);
  std::vector<const Task*> tasks(3, &task);
  std::vector<std::string> texts = {records[0].completion, records[0].completion, "nonsense"};
  auto results = check_parallel(checker, tasks, texts, 2);
  EXPECT_EQ(results[0].outcome, Outcome::correct);
  EXPECT_EQ(results[1].outcome, Outcome::correct);
  EXPECT_EQ(results[2].outcome, Outcome::format_error);
  Task broken{"broken", "", "{\"name\": 1}"};
  EXPECT_THROW(checker.check(broken, records[0].completion), std::runtime_error);
}

// Idle checkers are kept per op for the next check of that op, but only the max_idle most
// recent: one per op without bound held every op's reference outputs and a started sandbox
// child (a 29-op evaluation on the CPU machine reached 40 children and 11 GB and was killed
// by the OOM killer). The ones let go are closed: their children are gone.
TEST(HarnessTraining, HarnessCheckerKeepsOnlyTheMostRecentIdleCheckers) {
  REQUIRE_OPENCL();
  auto records = build_sft_dataset({relu_op()}, one_variant());
  ASSERT_EQ(records.size(), 1u);
  // This process's kforge-sandbox children (other tests may run beside this one).
  auto sandbox_children = [] {
    int count = 0;
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
      std::ifstream comm(entry.path() / "comm"), status(entry.path() / "status");
      std::string name, line;
      if (!(comm >> name) || name != "kforge-sandbox") continue;
      while (std::getline(status, line))
        if (line.rfind("PPid:", 0) == 0 && std::stol(line.substr(5)) == static_cast<long>(getpid())) ++count;
    }
    return count;
  };
  HarnessChecker checker(fast_checks(), 0, /*max_idle=*/2);
  // Five ops by id (the same relu under five names): each check creates its op's checker.
  for (int op_idx = 0; op_idx < 5; ++op_idx) {
    Task task{"relu_" + std::to_string(op_idx), records[0].prompt, kReluJson};
    EXPECT_EQ(checker.check(task, records[0].completion).outcome, Outcome::correct) << task.id;
    EXPECT_LE(checker.idle_count(), 2u) << "after " << task.id;
  }
  EXPECT_EQ(checker.idle_count(), 2u);
  // Closed checkers leave no children: a kept checker has at most two (the child it checked
  // with and the spare started for its next check); with all five kept there were six.
  EXPECT_LE(sandbox_children(), 4) << "children of closed checkers still run";
  // The most recent op's checker is reused: no new one for relu_4.
  Task last{"relu_4", records[0].prompt, kReluJson};
  EXPECT_EQ(checker.check(last, records[0].completion).outcome, Outcome::correct);
  EXPECT_EQ(checker.idle_count(), 2u);
}

// The CI version of the whole method: teacher dataset -> kforge-micro SFT ->
// GRPO with the harness as reward -> evaluation, in seconds on CPU.
TEST(HarnessTraining, CpuSftThenGrpoThenEvaluateEndToEnd) {
  REQUIRE_OPENCL();
  DatasetOptions options;
  options.max_variants_per_op = 2;
  options.check = fast_checks();
  auto records = build_sft_dataset({relu_op()}, options);
  ASSERT_FALSE(records.empty());
  std::vector<SftExample> pairs;
  std::vector<std::string> corpus;
  for (const auto& record : records) {
    pairs.push_back({record.prompt, record.completion});
    corpus.push_back(record.prompt + record.completion);
  }
  auto policy = bootstrap_tiny_model(corpus, TinyModelOptions{"kforge-micro", 400, 3, "cpu"});
  SftConfig sft;
  sft.max_steps = 30;
  sft.batch_size = 2;
  sft.micro_batch = 2;
  sft.optim.lr = 5e-3;
  sft.optim.warmup_steps = 3;
  SftTrainer sft_trainer(*policy, pairs, pairs, sft);
  double before = *sft_trainer.validation_loss();
  SftResult sft_result = sft_trainer.run();
  EXPECT_LT(*sft_result.val_loss, before);

  HarnessChecker checker(fast_checks());
  std::vector<Task> tasks = suite_tasks({relu_op()}, PromptStyle::kforge_tiny);
  GrpoConfig grpo;
  grpo.group_size = 4;
  grpo.tasks_per_step = 1;
  grpo.micro_batch = 4;
  grpo.check_threads = 2;
  grpo.sampling.max_new_tokens = 200;
  grpo.sampling.temperature = 1.0;
  grpo.sampling.stop = prompt_stop_strings(PromptStyle::kforge_tiny);
  grpo.optim.lr = 1e-4;
  GrpoTrainer trainer(*policy, nullptr, checker, grpo);
  for (int step_idx = 0; step_idx < 2; ++step_idx) {
    GrpoStepMetrics m = trainer.step(tasks);
    std::cerr << "grpo step " << m.to_json() << "\n";
    int total = 0;
    for (int count : m.outcomes) total += count;
    EXPECT_EQ(total, 4);
    EXPECT_GT(m.tokens, 0);
    EXPECT_GE(m.reward_mean, 0.0);
    EXPECT_LE(m.reward_mean, m.reward_max);
  }
  EvalConfig eval;
  eval.samples_per_op = 2;
  eval.k = 2;
  eval.sampling = grpo.sampling;
  EvalSummary summary = evaluate_policy(*policy, tasks, checker, eval);
  EXPECT_EQ(summary.ops, 1);
  EXPECT_EQ(summary.per_op[0].samples, 2);
  std::cerr << "eval " << eval_summary_to_json(summary) << "\n";
}
