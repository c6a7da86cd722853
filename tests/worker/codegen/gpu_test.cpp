// The teacher's cuda and triton programs on a real GPU through the harness Checker
// (NVRTC + driver API; the Python runner with compiled Triton): one op of every stage
// kind and layout, on the op's main (GPU-sized) shapes, with the first schedule of each
// target's space (the others are the autotuner's business: bench/gpu/run_device.sh teacher). Skipped with the reason where no NVIDIA GPU is present.
// Run: ctest -R codegen_gpu (label gpu; bench/gpu/run_device.sh test runs it on the H100).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "tests/worker/codegen/suite_ops.h"
#include "tests/worker/harness/harness_fixtures.h"
#include "worker/codegen/codegen.h"

using namespace kforge;

namespace {

// The GPU the harness would use: /dev/nvidia0 is there and the driver answers. (The
// driver is never initialised in this process: the Checker's children use it.)
bool have_nvidia_gpu(std::string& why) {
  if (!std::filesystem::exists("/dev/nvidia0")) {
    why = "no /dev/nvidia0";
    return false;
  }
  if (std::system("nvidia-smi -L >/dev/null 2>&1") != 0) {
    why = "nvidia-smi -L fails (no driver or no device)";
    return false;
  }
  return true;
}

void check_ops_on_gpu(const std::string& target) {
  harness::CheckOptions options = harness::testing::fast_options();
  options.target = target;
  options.device = "";  // CUDA device 0
  options.python = harness::testing::interpreter_python();
  options.trials = 2;
  options.trial_timeout_s = 60;  // the first launch of a Triton kernel compiles it
  unsetenv("TRITON_INTERPRET");
  codegen::Target language = codegen::Target::opencl;
  ASSERT_TRUE(codegen::parse_target(target, language));
  for (const char* name : {"silu_mul", "add_bcast_3d", "embedding", "cat_last", "flip_last", "pow_tensor",
                           "softmax_last", "layer_norm", "sum_dim0", "amax_dim1_3d", "mse_loss", "cumsum_last",
                           "cumsum_dim0", "argmax_last", "linear_gelu", "bmm", "attention", "matmul"}) {
    auto spec = kforge::testing::suite_op(name);
    auto analysis = codegen::analyze(spec);
    ASSERT_TRUE(analysis.ok()) << name << ": " << analysis.unsupported;
    auto space = codegen::schedule_space(analysis, language);
    ASSERT_FALSE(space.empty()) << name;
    std::string error;
    auto checker = harness::Checker::create(spec, options, error);
    ASSERT_TRUE(checker) << name << " " << target << ": " << error;
    for (size_t pick = 0; pick < 1; ++pick) {
      auto gen = codegen::emit_program(analysis, space[pick], language);
      ASSERT_TRUE(gen.ok()) << name << ": " << gen.unsupported;
      auto result = checker->check(gen.program);
      EXPECT_EQ(result.outcome, harness::Outcome::correct)
          << name << " " << target << " " << space[pick].label() << ": " << result.message << "\n" << gen.program;
      EXPECT_TRUE(result.environment.gpu) << name << " " << target;
    }
  }
}

}  // namespace

TEST(CodegenGpu, CudaProgramsOfEveryStageKindAreCorrectOnTheGpu) {
  std::string why;
  if (!have_nvidia_gpu(why)) GTEST_SKIP() << "no NVIDIA GPU: " << why;
  check_ops_on_gpu("cuda");
}

TEST(CodegenGpu, TritonProgramsOfEveryStageKindAreCorrectOnTheGpu) {
  std::string why;
  if (!have_nvidia_gpu(why)) GTEST_SKIP() << "no NVIDIA GPU: " << why;
  std::string python = harness::testing::interpreter_python();
  if (!harness::testing::triton_importable(python))
    GTEST_SKIP() << python << " cannot import torch and triton (set KFORGE_PYTHON)";
  check_ops_on_gpu("triton");
}
