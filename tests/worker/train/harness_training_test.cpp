// The trainers against the real kernel harness (PoCL) and teacher compiler on a
// small op: the dataset builder keeps verified teacher kernels, HarnessChecker maps
// outcomes and runs in parallel, and a CPU SFT -> GRPO -> evaluation pipeline runs
// end to end. Run: build/bin/train_harness_test (label slow; skips without OpenCL).
#include <gtest/gtest.h>

#include <iostream>

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

TEST(HarnessTraining, HarnessCheckerMapsOutcomesAndRunsInParallel) {
  REQUIRE_OPENCL();
  DatasetOptions options;
  options.max_variants_per_op = 1;
  options.check = fast_checks();
  auto records = build_sft_dataset({relu_op()}, options);
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
