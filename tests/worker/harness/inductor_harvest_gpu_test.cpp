// TorchInductor as a teacher on a GPU host: the reference runner compiles the op with
// torch.compile (default mode, dynamic shapes), the harvested kernels become a triton
// candidate, and the harness verifies and times it against CUDA eager and torch.compile.
// Label gpu: skipped with the reason without an NVIDIA GPU. Test: ctest -R harness_inductor_harvest_gpu.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "tests/worker/harness/harness_fixtures.h"

namespace kforge::harness::testing {
namespace {

CheckOptions gpu_options() {
  CheckOptions options = fast_options();
  options.target = "triton";
  options.python = std::getenv("KFORGE_PYTHON") ? std::getenv("KFORGE_PYTHON") : "python3";
  options.trials = 2;
  options.time = true;
  return options;
}

// Harvests `spec` on the GPU, checks the candidate; prints what a reader of the log needs.
void harvest_and_check(const spec::OpSpec& spec) {
  std::string error;
  auto checker = Checker::create(spec, gpu_options(), error);
  ASSERT_TRUE(checker) << error;
  InductorHarvest harvest = checker->harvest_inductor();
  ASSERT_TRUE(harvest.ok()) << spec.name << ": " << harvest.reason;
  std::printf("%s: harvested in %.0f ms, provenance %s\n", spec.name.c_str(), harvest.harvest_ms,
              harvest.provenance.c_str());
  EXPECT_NE(harvest.provenance.find("torch_version"), std::string::npos);
  CheckResult result = checker->check(harvest.source);
  ASSERT_EQ(result.outcome, Outcome::correct) << spec.name << ": " << result.message << "\n" << harvest.source;
  std::printf("%s: inductor candidate %.2fx CUDA eager, %.2fx torch.compile\n", spec.name.c_str(), result.speedup,
              result.speedup_vs_compile);
}

TEST(InductorHarvestGpu, PointwiseOpBecomesACorrectCandidate) {
  std::string why;
  if (!have_nvidia_gpu(why)) GTEST_SKIP() << "no NVIDIA GPU: " << why;
  harvest_and_check(silu_mul_op());
}

TEST(InductorHarvestGpu, SoftmaxBecomesACorrectCandidate) {
  std::string why;
  if (!have_nvidia_gpu(why)) GTEST_SKIP() << "no NVIDIA GPU: " << why;
  harvest_and_check(softmax_op());
}

TEST(InductorHarvestGpu, MatmulIsRefusedWithTheReason) {
  std::string why;
  if (!have_nvidia_gpu(why)) GTEST_SKIP() << "no NVIDIA GPU: " << why;
  std::string error;
  auto checker = Checker::create(matmul_op(), gpu_options(), error);
  ASSERT_TRUE(checker) << error;
  InductorHarvest harvest = checker->harvest_inductor();
  EXPECT_FALSE(harvest.ok()) << harvest.source;
  std::printf("matmul: %s\n", harvest.reason.c_str());
  EXPECT_FALSE(harvest.reason.empty());
}

}  // namespace
}  // namespace kforge::harness::testing
