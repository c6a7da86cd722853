// Window stages (conv, conv_transpose, max / avg pooling; 1-d, 2-d, 3-d), the norms built on
// reshapes (group_norm, instance / batch norm over several dims, means over spatial dims) and
// KernelBench level-2 chains whose reductions get stages of their own (a min over one dim
// feeding a softmax over another), one op file each in tests/worker/codegen/kernelbench_ops/:
// every op through the harness Checker
// on PoCL (opencl: sandboxed child, seeded + secret-seed trials, odd extra shapes), every cuda
// schedule through the harness's format, rules, launch plan and NVRTC for sm_90, and the
// first and last triton schedules (implicit GEMM, direct) through the Checker in Triton's
// CPU interpreter. A conv kernel with
// its padding dropped must fail. Run: ctest -R codegen_window (minutes).
#include <gtest/gtest.h>

#include "tests/worker/codegen/cuda_programs.h"
#include "tests/worker/codegen/suite_ops.h"
#include "tests/worker/harness/harness_fixtures.h"
#include "worker/codegen/codegen.h"
#include "worker/harness/checker.h"
#include "worker/harness/devices.h"

using namespace kforge;

namespace {

harness::CheckOptions untimed_options() {
  harness::CheckOptions options;
  options.trials = 1;  // + the secret-seed trial, the determinism re-run and the extra shapes
  options.time = false;
  return options;
}

}  // namespace

namespace {

// Every other op file from `first` (two TESTs, so ctest runs the halves side by side).
void check_ops_on_pocl(size_t first) {
  const auto files = kforge::testing::kernelbench_op_files();
  ASSERT_GE(files.size(), 30u);
  for (size_t file_idx = first; file_idx < files.size(); file_idx += 2) {
    const auto& path = files[file_idx];
    auto spec = kforge::testing::load_op_file(path);
    auto analysis = codegen::analyze(spec);
    ASSERT_TRUE(analysis.ok()) << path.stem() << ": " << analysis.unsupported;
    auto space = codegen::schedule_space(analysis);
    ASSERT_FALSE(space.empty()) << path.stem();
    std::string error;
    auto checker = harness::Checker::create(spec, untimed_options(), error);
    ASSERT_TRUE(checker) << path.stem() << ": " << error;
    // The first schedule and the middle one (another work-group size).
    std::vector<size_t> picks = {0};
    if (space.size() > 1) picks.push_back(space.size() / 2);
    for (size_t pick : picks) {
      auto gen = codegen::emit_program(analysis, space[pick]);
      ASSERT_TRUE(gen.ok()) << path.stem() << ": " << gen.unsupported;
      auto result = checker->check(gen.program);
      std::cout << path.stem().string() << " " << analysis.describe() << " " << space[pick].label() << " "
                << harness::outcome_name(result.outcome) << std::endl;
      EXPECT_EQ(result.outcome, harness::Outcome::correct)
          << path.stem() << " " << space[pick].label() << ": " << result.message << "\n" << gen.program;
    }
  }
}

}  // namespace

TEST(CodegenWindow, EveryOpIsCheckerCorrectOnPoclFirstHalf) {
  if (harness::list_devices().empty()) GTEST_SKIP() << "no OpenCL device";
  check_ops_on_pocl(0);
}

TEST(CodegenWindow, EveryOpIsCheckerCorrectOnPoclSecondHalf) {
  if (harness::list_devices().empty()) GTEST_SKIP() << "no OpenCL device";
  check_ops_on_pocl(1);
}

TEST(CodegenWindow, CheckerRejectsAConvKernelWithoutItsPadding) {
  if (harness::list_devices().empty()) GTEST_SKIP() << "no OpenCL device";
  auto spec = kforge::testing::kernelbench_op("conv2d_relu_bias");
  auto gen = codegen::emit_program(codegen::analyze(spec), codegen::Schedule{});
  ASSERT_TRUE(gen.ok()) << gen.unsupported;
  std::string broken = gen.program;
  const std::string padded = "c2 * 2 - 1 + kd0";  // stride 2, padding 1 along H
  auto at = broken.find(padded);
  ASSERT_NE(at, std::string::npos) << broken;
  broken.replace(at, padded.size(), "c2 * 2 + kd0");
  std::string error;
  auto checker = harness::Checker::create(spec, untimed_options(), error);
  ASSERT_TRUE(checker) << error;
  EXPECT_EQ(checker->check(gen.program).outcome, harness::Outcome::correct);
  auto bad = checker->check(broken);
  EXPECT_EQ(bad.outcome, harness::Outcome::wrong_output) << bad.message;
}

TEST(CodegenWindow, EveryCudaScheduleCompilesWithNvrtcForSm90) {
  REQUIRE_NVRTC();
  int programs = 0;
  for (const auto& path : kforge::testing::kernelbench_op_files()) {
    auto spec = kforge::testing::load_op_file(path);
    auto analysis = codegen::analyze(spec);
    ASSERT_TRUE(analysis.ok()) << path.stem() << ": " << analysis.unsupported;
    auto space = codegen::schedule_space(analysis, codegen::Target::cuda);
    ASSERT_FALSE(space.empty()) << path.stem();
    for (const auto& schedule : space) {
      auto gen = codegen::emit_program(analysis, schedule, codegen::Target::cuda);
      ASSERT_TRUE(gen.ok()) << path.stem() << " " << schedule.label() << ": " << gen.unsupported;
      EXPECT_EQ(kforge::testing::cuda_problems(spec, analysis, gen.program), "")
          << path.stem() << " " << schedule.label() << "\n" << gen.program;
      ++programs;
    }
  }
  std::printf("%d cuda window programs compiled for sm_90\n", programs);
}

namespace {

// Every fourth op file from `first` in Triton's CPU interpreter (four TESTs, run side by side
// by ctest: on a GPU host's PyTorch the interpreter is several times slower than here, and a
// half of the list outlasted a 400 s device call twice, 2026-11-28).
constexpr size_t kInterpreterParts = 4;
void check_triton_in_interpreter(const std::string& python, size_t first) {
  const harness::CheckOptions options = harness::testing::interpreter_options(python);
  const auto files = kforge::testing::kernelbench_op_files();
  for (size_t file_idx = first; file_idx < files.size(); file_idx += kInterpreterParts) {
    const auto& path = files[file_idx];
    // On the op's odd shapes, as codegen_triton_run_test: the interpreter runs every program
    // in numpy, and a 1M-element batch norm took over a minute on a loaded 2-core machine
    // (the main shapes run on the GPU in codegen_gpu_test).
    auto spec = kforge::testing::on_odd_shapes(kforge::testing::load_op_file(path));
    auto analysis = codegen::analyze(spec);
    ASSERT_TRUE(analysis.ok()) << path.stem() << ": " << analysis.unsupported;
    auto space = codegen::schedule_space(analysis, codegen::Target::triton);
    ASSERT_FALSE(space.empty()) << path.stem();
    std::string error;
    auto checker = harness::Checker::create(spec, options, error);
    ASSERT_TRUE(checker) << path.stem() << ": " << error;
    // The first schedule (an implicit GEMM for convs with many channels per group) and the
    // last (BLOCK outputs per program, each walking its window).
    std::vector<codegen::Schedule> picks = {space.front()};
    if (space.size() > 1) picks.push_back(space.back());
    for (const auto& schedule : picks) {
      auto gen = codegen::emit_program(analysis, schedule, codegen::Target::triton);
      ASSERT_TRUE(gen.ok()) << path.stem() << ": " << gen.unsupported;
      auto result = checker->check(gen.program);
      EXPECT_EQ(result.outcome, harness::Outcome::correct)
          << path.stem() << " " << schedule.label() << ": " << result.message << "\n" << gen.program;
    }
  }
}

}  // namespace

TEST(CodegenWindow, TritonProgramsAreCorrectInTheInterpreterPart1) {
  REQUIRE_TRITON(python);
  check_triton_in_interpreter(python, 0);
}

TEST(CodegenWindow, TritonProgramsAreCorrectInTheInterpreterPart2) {
  REQUIRE_TRITON(python);
  check_triton_in_interpreter(python, 1);
}

TEST(CodegenWindow, TritonProgramsAreCorrectInTheInterpreterPart3) {
  REQUIRE_TRITON(python);
  check_triton_in_interpreter(python, 2);
}

TEST(CodegenWindow, TritonProgramsAreCorrectInTheInterpreterPart4) {
  REQUIRE_TRITON(python);
  check_triton_in_interpreter(python, 3);
}
