// Window stages (conv, conv_transpose, max / avg pooling; 1-d, 2-d, 3-d), the norms built on
// reshapes (group_norm, instance / batch norm over several dims, means over spatial dims) and
// KernelBench level-2 chains whose reductions get stages of their own (a min over one dim
// feeding a softmax over another), one op file each in tests/worker/codegen/kernelbench_ops/:
// every op through the harness Checker
// on PoCL (opencl: sandboxed child, seeded + secret-seed trials, odd extra shapes), every cuda
// schedule through the harness's format, rules, launch plan and NVRTC for sm_90, and the
// first and last triton schedules (implicit GEMM, direct) through the Checker in Triton's
// CPU interpreter; the taps-outer conv form (Schedule::conv_taps_outer) on forward and
// transposed convs of every kind there too. A conv kernel with its padding dropped must fail
// (on PoCL and, taps-outer, in the interpreter). Run: ctest -R codegen_window (minutes).
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

namespace {

// A conv op `forward(x, w, b)` whose source is `call` (over x, w, b), at shapes with more
// input channels per group than one BLOCK_K of 16 and a partial last block, and an odd extra
// shape with fewer positions.
spec::OpSpec taps_outer_op(const std::string& name, const std::string& call, std::vector<int64_t> x,
                           std::vector<int64_t> w, int64_t bias, std::vector<int64_t> extra_x) {
  using harness::testing::input;
  spec::OpSpec op;
  op.name = name;
  op.source = "def forward(x: Tensor, w: Tensor, b: Tensor) -> Tensor:\n    return " + call + "\n";
  op.inputs = {input("x", x), input("w", w, {spec::DistKind::uniform, -0.3, 0.3}), input("b", {bias})};
  op.extra_shapes = {{{"x", extra_x}, {"w", w}, {"b", {bias}}}};
  return op;
}

// Taps-outer (Schedule::conv_taps_outer) on 32 x 16 x 16 tiles: several position and channel
// tiles, each tap's channels in two blocks (the second partial).
codegen::Schedule taps_outer_schedule(int dot_x3) {
  codegen::Schedule s;
  s.block_m = 32;
  s.block_n = 16;
  s.block_k = 16;
  s.dot_x3 = dot_x3;
  s.conv_taps_outer = 1;
  return s;
}

void check_taps_outer(const std::string& python, const std::vector<spec::OpSpec>& ops) {
  const harness::CheckOptions options = harness::testing::interpreter_options(python);
  for (const auto& op : ops) {
    auto analysis = codegen::analyze(op);
    ASSERT_TRUE(analysis.ok()) << op.name << ": " << analysis.unsupported;
    std::string error;
    auto checker = harness::Checker::create(op, options, error);
    ASSERT_TRUE(checker) << op.name << ": " << error;
    for (int dot_x3 : {1, 0}) {
      const codegen::Schedule schedule = taps_outer_schedule(dot_x3);
      auto gen = codegen::emit_program(analysis, schedule, codegen::Target::triton);
      ASSERT_TRUE(gen.ok()) << op.name << ": " << gen.unsupported;
      ASSERT_NE(gen.program.find("in tl.static_range(KD0)"), std::string::npos) << op.name << "\n" << gen.program;
      auto result = checker->check(gen.program);
      std::cout << op.name << " " << schedule.label() << " " << harness::outcome_name(result.outcome) << std::endl;
      EXPECT_EQ(result.outcome, harness::Outcome::correct)
          << op.name << " " << schedule.label() << ": " << result.message << "\n" << gen.program;
    }
  }
}

}  // namespace

// Forward convs in the taps-outer form in Triton's interpreter: 2-d padded, strided and
// dilated, grouped (program_id(1) = group), 3-d, 1-d; and one with its padding offset dropped
// from the input index, which must fail.
TEST(CodegenWindow, TapsOuterConvsAreCorrectInTheInterpreter) {
  REQUIRE_TRITON(python);
  check_taps_outer(
      python,
      {taps_outer_op("taps_padded_2d", "torch.conv2d(x, w, b, [1, 1], [1, 1], [1, 1], 1)", {2, 20, 9, 11},
                     {24, 20, 3, 3}, 24, {1, 20, 6, 5}),
       taps_outer_op("taps_strided_dilated_2d", "torch.conv2d(x, w, b, [2, 3], [2, 1], [2, 3], 1)", {2, 12, 13, 15},
                     {16, 12, 3, 2}, 16, {1, 12, 9, 8}),
       taps_outer_op("taps_grouped_2d", "torch.conv2d(x, w, b, [1, 2], [1, 0], [1, 1], 2)", {2, 36, 10, 9},
                     {16, 18, 3, 3}, 16, {1, 36, 5, 6}),
       taps_outer_op("taps_3d", "torch.conv3d(x, w, b, [1, 2, 1], [0, 1, 1], [1, 1, 2], 1)", {2, 9, 5, 8, 7},
                     {10, 9, 2, 3, 3}, 10, {1, 9, 3, 5, 6}),
       taps_outer_op("taps_1d", "torch.conv1d(x, w, b, [3], [2], [2], 1)", {3, 17, 40}, {12, 17, 5}, 12, {2, 17, 23})});

  auto op = taps_outer_op("taps_padded_2d", "torch.conv2d(x, w, b, [1, 1], [1, 1], [1, 1], 1)", {2, 20, 9, 11},
                          {24, 20, 3, 3}, 24, {1, 20, 6, 5});
  auto gen = codegen::emit_program(codegen::analyze(op), taps_outer_schedule(1), codegen::Target::triton);
  ASSERT_TRUE(gen.ok()) << gen.unsupported;
  std::string broken = gen.program;
  const std::string padded = "ix0 = o0 - 1 + kd0";
  auto at = broken.find(padded);
  ASSERT_NE(at, std::string::npos) << broken;
  broken.replace(at, padded.size(), "ix0 = o0 + kd0");
  std::string error;
  auto checker = harness::Checker::create(op, harness::testing::interpreter_options(python), error);
  ASSERT_TRUE(checker) << error;
  auto bad = checker->check(broken);
  EXPECT_EQ(bad.outcome, harness::Outcome::wrong_output) << bad.message;
}

// Transposed convs not split by phase in the taps-outer form: stride 1 (grouped, dilated) and
// a dilated strided 1-d one (the gather form's divisibility mask per tap).
TEST(CodegenWindow, TapsOuterTransposedConvsAreCorrectInTheInterpreter) {
  REQUIRE_TRITON(python);
  check_taps_outer(
      python,
      {taps_outer_op("taps_transposed_2d", "torch.conv_transpose2d(x, w, b, [1, 1], [1, 0], [0, 0], 2, [1, 2])",
                     {2, 36, 9, 7}, {36, 10, 3, 3}, 20, {1, 36, 5, 4}),
       taps_outer_op("taps_transposed_1d_strided_dilated",
                     "torch.conv_transpose1d(x, w, b, [2], [1], [1], 1, [2])", {2, 20, 13}, {20, 12, 3}, 12,
                     {1, 20, 6})});
}
