// Payload parsing of the train_sft / train_grpo / evaluate jobs: defaults match the
// API's, every rejected field is named, suites resolve to a directory and split.
// ctest -R jobs_args_test
#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>

#include "tests/support/processes.h"
#include "worker/jobs/job_args.h"

using namespace kforge::jobs;

namespace {

// The message of the std::invalid_argument `parse` throws, or "" if it did not throw.
template <typename Fn>
std::string error_of(Fn parse) {
  try {
    parse();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(JobArgs, SftDefaultsAndOverrides) {
  SftJobArgs args = parse_sft_job_args(R"({"method": "sft", "suite": "builtin", "dataset": null,
      "base_model": null, "base_model_id": null, "output_model": "kforge-micro",
      "hyperparameters": {"epochs": 2, "max_steps": 7, "learning_rate": 0.001, "limit_ops": 3, "time_kernels": 1}})");
  EXPECT_EQ(args.suite, "builtin");
  EXPECT_EQ(args.output_model, "kforge-micro");
  EXPECT_EQ(args.base_model_id, 0);
  EXPECT_EQ(args.epochs, 2);
  EXPECT_EQ(args.max_steps, 7);
  EXPECT_DOUBLE_EQ(args.learning_rate, 0.001);
  EXPECT_EQ(args.batch_size, 16) << "API default";
  EXPECT_EQ(args.check.limit_ops, 3);
  EXPECT_EQ(args.check.max_check_elements, 65536);
  EXPECT_TRUE(args.check.time_kernels);
  // A float that is integral is accepted as an integer (JSON has one number type).
  EXPECT_EQ(parse_sft_job_args(R"({"dataset": "/d.jsonl", "hyperparameters": {"batch_size": 8.0}})").batch_size, 8);
}

TEST(JobArgs, SftRejectsBadFieldsByName) {
  EXPECT_NE(error_of([] { parse_sft_job_args("[]"); }).find("not a JSON object"), std::string::npos);
  EXPECT_NE(error_of([] { parse_sft_job_args(R"({"hyperparameters": {}})"); }).find("suite: give exactly one"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_sft_job_args(R"({"suite": "b", "dataset": "/x"})"); }).find("exactly one"),
            std::string::npos);
  std::string batch = error_of([] { parse_sft_job_args(R"({"suite": "b", "hyperparameters": {"batch_size": "big"}})"); });
  EXPECT_NE(batch.find("hyperparameters.batch_size: must be an integer"), std::string::npos) << batch;
  std::string lr = error_of([] { parse_sft_job_args(R"({"suite": "b", "hyperparameters": {"learning_rate": 5}})"); });
  EXPECT_NE(lr.find("hyperparameters.learning_rate: must be in"), std::string::npos) << lr;
  std::string steps = error_of([] { parse_sft_job_args(R"({"suite": "b", "hyperparameters": {"max_steps": 2.5}})"); });
  EXPECT_NE(steps.find("hyperparameters.max_steps"), std::string::npos) << steps;
  EXPECT_NE(error_of([] { parse_sft_job_args(R"({"suite": "b", "hyperparameters": [1]})"); }).find("hyperparameters: must be an object"),
            std::string::npos);
}

TEST(JobArgs, GrpoNeedsBaseModelAndSuite) {
  GrpoJobArgs args = parse_grpo_job_args(
      R"({"suite": "builtin", "base_model_id": 4, "hyperparameters": {"group_size": 4, "kl_coef": 0.01}})");
  EXPECT_EQ(args.base_model_id, 4);
  EXPECT_EQ(args.group_size, 4);
  EXPECT_DOUBLE_EQ(args.kl_coef, 0.01);
  EXPECT_DOUBLE_EQ(args.eps_high, 0.28);
  EXPECT_EQ(args.steps, 200);
  EXPECT_NE(error_of([] { parse_grpo_job_args(R"({"suite": "builtin"})"); }).find("base_model"), std::string::npos);
  EXPECT_NE(error_of([] { parse_grpo_job_args(R"({"dataset": "/x.jsonl", "base_model_id": 1})"); }).find("dataset: GRPO"),
            std::string::npos);
  std::string eps = error_of([] {
    parse_grpo_job_args(R"({"suite": "b", "base_model_id": 1, "hyperparameters": {"eps_low": 0.3, "eps_high": 0.1}})");
  });
  EXPECT_NE(eps.find("hyperparameters.eps_high"), std::string::npos) << eps;
  std::string group = error_of([] {
    parse_grpo_job_args(R"({"suite": "b", "base_model_id": 1, "hyperparameters": {"group_size": 1}})");
  });
  EXPECT_NE(group.find("hyperparameters.group_size: must be in 2..256"), std::string::npos) << group;
}

TEST(JobArgs, EvaluateSettings) {
  EvaluateJobArgs args = parse_evaluate_job_args(
      R"({"model": "kforge-tiny@2", "model_id": 9, "suite": "heldout", "target": "opencl", "settings": {"samples": 6}})");
  EXPECT_EQ(args.model_id, 9);
  EXPECT_EQ(args.samples, 6);
  EXPECT_EQ(args.k, 6) << "k defaults to samples";
  EXPECT_EQ(args.check.max_check_elements, 0) << "evaluation checks full shapes by default";
  // Jobs queued before settings existed still parse.
  EXPECT_EQ(parse_evaluate_job_args(R"({"model_id": 9, "suite": "heldout"})").samples, 4);
  EXPECT_NE(error_of([] { parse_evaluate_job_args(R"({"suite": "heldout"})"); }).find("model:"), std::string::npos);
  std::string k = error_of([] { parse_evaluate_job_args(R"({"model_id": 1, "suite": "s", "settings": {"samples": 2, "k": 3}})"); });
  EXPECT_NE(k.find("settings.k: must be at most samples"), std::string::npos) << k;
}

TEST(JobArgs, SuitesResolveToDirectoryAndSplit) {
  std::string builtin = kforge::test::source_path("suite");
  EXPECT_EQ(resolve_training_suite("builtin", builtin).split, "train");
  EXPECT_EQ(resolve_training_suite("builtin", builtin).dir, builtin);
  EXPECT_EQ(resolve_training_suite(builtin, "/elsewhere").dir, builtin) << "a suite directory on the worker";
  EXPECT_NE(error_of([&] { resolve_training_suite("heldout", builtin); }).find("never uses the held-out split"),
            std::string::npos);
  EXPECT_NE(error_of([&] { resolve_training_suite("nope", builtin); }).find("suite: unknown suite 'nope'"),
            std::string::npos);
  EXPECT_EQ(resolve_evaluation_suite("heldout", builtin).split, "heldout");
  EXPECT_EQ(resolve_evaluation_suite("builtin", builtin).split, "heldout");
  EXPECT_EQ(resolve_evaluation_suite("builtin:train", builtin).split, "train");
  EXPECT_EQ(resolve_evaluation_suite("all", builtin).split, "");
  EXPECT_NE(error_of([&] { resolve_evaluation_suite("kernelbench", builtin); }).find("suite: unknown suite"),
            std::string::npos);
}
