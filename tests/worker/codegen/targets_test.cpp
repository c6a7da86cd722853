// The teacher in every target, without a GPU: every suite op lowers for opencl, cuda and
// triton; every op's first cuda program parses in the kforge format, passes the static
// rules, plans its launches on the main shapes and compiles with NVRTC for sm_90 (Hopper)
// (every schedule: codegen_cuda_space_test); every triton program passes the runner's
// static rules (worker/harness/runner/triton_rules.py); role kernel names (the SFT data's)
// in every target; the kforge-codegen command line (dump, emit). Run: ctest -R codegen_targets.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "common/subprocess.h"
#include "tests/worker/codegen/suite_ops.h"
#include "worker/codegen/codegen.h"
#include "worker/codegen/emit_program.h"
#include "tests/worker/codegen/cuda_programs.h"

using namespace kforge;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// How many times `what` occurs in `text` (overlapping occurrences counted).
size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(CodegenTargets, EverySuiteOpLowersForEveryTarget) {
  int ops = 0;
  for (const auto& path : kforge::testing::suite_files()) {
    auto analysis = codegen::analyze(kforge::testing::load_op_file(path));
    ASSERT_TRUE(analysis.ok()) << path << ": " << analysis.unsupported;
    ++ops;
    for (auto target : {codegen::Target::opencl, codegen::Target::cuda, codegen::Target::triton}) {
      auto space = codegen::schedule_space(analysis, target);
      ASSERT_FALSE(space.empty()) << path << " " << codegen::target_name(target);
      auto gen = codegen::emit_program(analysis, space.front(), target);
      ASSERT_TRUE(gen.ok()) << path << " " << codegen::target_name(target) << ": " << gen.unsupported;
    }
  }
  EXPECT_EQ(ops, 147);
}

TEST(CodegenTargets, TargetsShareTheStagesAndSpellTheirOwnKernels) {
  auto analysis = codegen::analyze(kforge::testing::suite_op("softmax_last"));
  ASSERT_TRUE(analysis.ok()) << analysis.unsupported;
  auto cuda = codegen::emit_program(analysis, codegen::schedule_space(analysis, codegen::Target::cuda).front(),
                                    codegen::Target::cuda);
  ASSERT_TRUE(cuda.ok()) << cuda.unsupported;
  EXPECT_TRUE(contains(cuda.program, "extern \"C\" __global__ __launch_bounds__(")) << cuda.program;
  EXPECT_TRUE(contains(cuda.program, "__shfl_xor_sync")) << "warp-shuffle row reduction\n" << cuda.program;
  EXPECT_TRUE(contains(cuda.program, "expf(")) << cuda.program;
  EXPECT_FALSE(contains(cuda.program, "get_global_id")) << cuda.program;
  auto triton = codegen::emit_program(analysis, codegen::schedule_space(analysis, codegen::Target::triton).front(),
                                      codegen::Target::triton);
  ASSERT_TRUE(triton.ok()) << triton.unsupported;
  EXPECT_TRUE(contains(triton.program, "@triton.jit")) << triton.program;
  EXPECT_TRUE(contains(triton.program, "def forward(x):")) << triton.program;
  // The whole row in registers: one load feeds the max, the sum and the store.
  EXPECT_TRUE(contains(triton.program, "BLOCK=triton.next_power_of_2(x.size(1))")) << triton.program;
  EXPECT_EQ(triton.program.find("tl.load"), triton.program.rfind("tl.load")) << triton.program;

  auto linear = codegen::analyze(kforge::testing::suite_op("linear_gelu"));
  auto mm_space = codegen::schedule_space(linear, codegen::Target::triton);
  auto mm = codegen::emit_program(linear, mm_space.front(), codegen::Target::triton);
  ASSERT_TRUE(mm.ok()) << mm.unsupported;
  // tf32x3 tiles first (tensor cores), the fp32 FMA ("ieee") tiles after them.
  EXPECT_TRUE(contains(mm.program, "tl.dot(a_tile, b_tile, acc, input_precision=\"tf32x3\")")) << mm.program;
  EXPECT_TRUE(contains(mm.program, ".x3, target triton")) << "the schedule label says so\n" << mm.program;
  auto ieee = std::find_if(mm_space.begin(), mm_space.end(), [](const codegen::Schedule& s) { return !s.dot_x3; });
  ASSERT_NE(ieee, mm_space.end());
  EXPECT_TRUE(contains(codegen::emit_program(linear, *ieee, codegen::Target::triton).program,
                       "tl.dot(a_tile, b_tile, acc, input_precision=\"ieee\")"));
  EXPECT_TRUE(contains(mm.program, "GROUP_M")) << mm.program;
  EXPECT_TRUE(contains(mm.program, "tl.erf(")) << "gelu fused into the epilogue\n" << mm.program;
  // CUDA: tensor-core tiles first (3xTF32 through the WMMA builtins, no inline assembly), then
  // register tiles (double-buffered shared slices, float4 reads), the 1-D tiles after.
  const auto cuda_space = codegen::schedule_space(linear, codegen::Target::cuda);
  auto tensor = codegen::emit_program(linear, cuda_space.front(), codegen::Target::cuda);
  ASSERT_TRUE(tensor.ok()) << tensor.unsupported;
  EXPECT_TRUE(contains(tensor.program, "__mma_tf32_m16n16k8_mma_f32(acc[i][j]")) << tensor.program;
  EXPECT_TRUE(contains(tensor.program, "& 0xffffe000u")) << "operands split into TF32 hi and lo\n" << tensor.program;
  EXPECT_TRUE(contains(tensor.program, ".x3.tc")) << tensor.program;
  EXPECT_FALSE(contains(tensor.program, "asm")) << tensor.program;
  auto register_form = std::find_if(cuda_space.begin(), cuda_space.end(),
                                    [](const codegen::Schedule& s) { return s.reg_m > 0; });
  ASSERT_NE(register_form, cuda_space.end());
  auto registers = codegen::emit_program(linear, *register_form, codegen::Target::cuda);
  ASSERT_TRUE(registers.ok()) << registers.unsupported;
  EXPECT_TRUE(contains(registers.program, "__shared__ float As[2][8][")) << registers.program;
  EXPECT_TRUE(contains(registers.program, "*reinterpret_cast<const float4*>(&As[buf][kk]")) << registers.program;
  EXPECT_TRUE(contains(registers.program, "__syncthreads()")) << registers.program;
  auto tile_form = std::find_if(cuda_space.begin(), cuda_space.end(),
                                [](const codegen::Schedule& s) { return s.reg_m == 0 && s.warp_m == 0; });
  ASSERT_NE(tile_form, cuda_space.end());
  auto tiled = codegen::emit_program(linear, *tile_form, codegen::Target::cuda);
  EXPECT_TRUE(contains(tiled.program, "__shared__ float tile_a")) << tiled.program;
}

// The SFT data names kernels by role, so a model never copies the op's name into the
// launch line and the kernel: every stage's kernel is "<role>[idx]_kernel" in every target,
// the op's name appears in no kernel name, and the launch lines name the kernels defined.
TEST(CodegenTargets, RoleKernelNamesReplaceTheOpsNameInEveryTarget) {
  for (const char* op : {"attention", "silu_mul"}) {
    auto analysis = codegen::analyze(kforge::testing::suite_op(op));
    ASSERT_TRUE(analysis.ok()) << analysis.unsupported;
    analysis.role_kernel_names = true;
    if (std::string(op) == "silu_mul") EXPECT_EQ(codegen::emit::kernel_name(analysis, 0), "pointwise_kernel");
    else ASSERT_GT(analysis.stages.size(), 1u) << "attention has several stages";
    for (auto target : {codegen::Target::opencl, codegen::Target::cuda, codegen::Target::triton}) {
      SCOPED_TRACE(std::string(op) + " " + codegen::target_name(target));
      auto gen = codegen::emit_program(analysis, codegen::schedule_space(analysis, target).front(), target);
      ASSERT_TRUE(gen.ok()) << gen.unsupported;
      EXPECT_FALSE(contains(gen.program, codegen::emit::kernel_prefix(analysis.op_name) + "_")) << gen.program;
      for (size_t stage_idx = 0; stage_idx < analysis.stages.size(); ++stage_idx) {
        std::string name = codegen::emit::kernel_name(analysis, stage_idx);
        std::string suffix = (analysis.stages.size() > 1 ? std::to_string(stage_idx) : "") + "_kernel";
        EXPECT_EQ(name.substr(name.size() - suffix.size()), suffix);
        EXPECT_TRUE(contains(gen.program, name)) << name << "\n" << gen.program;
        if (target == codegen::Target::opencl) {
          EXPECT_TRUE(contains(gen.program, "// kforge-launch: " + name + " ")) << gen.program;
          EXPECT_TRUE(contains(gen.program, "__kernel void " + name + "(")) << gen.program;
        }
      }
    }
    analysis.role_kernel_names = false;
    EXPECT_EQ(codegen::emit::kernel_name(analysis, 0).rfind(codegen::emit::kernel_prefix(analysis.op_name) + "_", 0), 0u)
        << "op names stay the default (generation, the leaderboard's kernels)";
  }
}

TEST(CodegenTargets, FirstCudaScheduleOfEverySuiteOpCompilesWithNvrtcForSm90) {
  REQUIRE_NVRTC();
  EXPECT_EQ(kforge::testing::check_cuda_programs(/*every_schedule=*/false), 147);
}

TEST(CodegenTargets, EveryTritonProgramPassesTheRunnersStaticRules) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("kforge_triton_rules_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  int programs = 0;
  for (const auto& path : kforge::testing::suite_files()) {
    auto analysis = codegen::analyze(kforge::testing::load_op_file(path));
    ASSERT_TRUE(analysis.ok()) << path;
    int index = 0;
    for (const auto& schedule : codegen::schedule_space(analysis, codegen::Target::triton)) {
      auto gen = codegen::emit_program(analysis, schedule, codegen::Target::triton);
      ASSERT_TRUE(gen.ok()) << path << ": " << gen.unsupported;
      std::ofstream(dir / (path.stem().string() + "." + std::to_string(index++) + ".py")) << gen.program;
      ++programs;
    }
  }
  // triton_rules needs only the standard library: any python3 reads the ASTs.
  std::string runner = std::string(KFORGE_BIN_DIR) + "/runner";
  std::string script = "import sys, glob; sys.path.insert(0, '" + runner +
                       "'); from triton_rules import check_module\n"
                       "bad = 0\n"
                       "for f in sorted(glob.glob('" + dir.string() + "/*.py')):\n"
                       "    try: check_module(open(f).read())\n"
                       "    except Exception as e: bad += 1; print(f, type(e).__name__, e)\n"
                       "sys.exit(1 if bad else 0)\n";
  std::ofstream(dir / "check.py.txt") << script;
  int rc = std::system(("python3 " + (dir / "check.py.txt").string()).c_str());
  fs::remove_all(dir);
  EXPECT_EQ(rc, 0) << "some triton programs break the runner's rules (printed above)";
  EXPECT_GE(programs, 147);
}

// Triton accepts only a power of two for num_warps: a launch with 13 (a 6727-long row's
// whole-row schedule, KernelBench level 2's 8_Conv3d_..._Sum) fails on the GPU at its first
// call, while Triton's CPU interpreter ignores the number. Every launch of every schedule.
TEST(CodegenTargets, EveryTritonLaunchAsksForAPowerOfTwoWarps) {
  std::vector<std::pair<std::string, spec::OpSpec>> ops;
  for (const auto& path : kforge::testing::suite_files())
    ops.emplace_back(path.stem().string(), kforge::testing::load_op_file(path));
  for (const auto& path : kforge::testing::kernelbench_op_files())
    ops.emplace_back(path.stem().string(), kforge::testing::load_op_file(path));
  auto long_rows = kforge::testing::suite_op("softmax_last");
  long_rows.inputs[0].shape = {64, 6727};  // one warp per 512 values would be 13
  ops.emplace_back("softmax_last 64x6727", long_rows);
  int launches = 0;
  for (const auto& [path, spec] : ops) {
    auto analysis = codegen::analyze(spec);
    ASSERT_TRUE(analysis.ok()) << path;
    for (const auto& schedule : codegen::schedule_space(analysis, codegen::Target::triton)) {
      auto gen = codegen::emit_program(analysis, schedule, codegen::Target::triton);
      ASSERT_TRUE(gen.ok()) << path << ": " << gen.unsupported;
      const std::string key = "num_warps=";
      for (size_t at = gen.program.find(key); at != std::string::npos; at = gen.program.find(key, at + 1)) {
        int warps = std::atoi(gen.program.c_str() + at + key.size());
        EXPECT_TRUE(warps >= 1 && (warps & (warps - 1)) == 0)
            << path << " " << schedule.label() << ": num_warps=" << warps;
        ++launches;
      }
    }
  }
  EXPECT_GT(launches, 1000);
}

// kforge-codegen from the command line: `dump` prints every schedule's program (what a
// refactor's before/after diff reads), and `emit` refuses a schedule index past the space
// rather than emitting some other program.
TEST(CodegenTargets, CommandLineDumpsEverySchedulesProgramAndRefusesAnIndexPastTheSpace) {
  const std::string tool = std::string(KFORGE_BIN_DIR) + "/kforge-codegen";
  const std::string op = std::string(KFORGE_SOURCE_DIR) + "/suite/level2/silu_mul.json";
  auto analysis = codegen::analyze(kforge::testing::suite_op("silu_mul"));
  ASSERT_TRUE(analysis.ok()) << analysis.unsupported;
  const auto space = codegen::schedule_space(analysis, codegen::Target::triton);
  auto [status, out] = kforge::run_command({tool, "dump", op, "--target", "triton"});
  ASSERT_EQ(status, 0) << out;
  size_t headers = 0;
  for (size_t at = out.find("#### "); at != std::string::npos; at = out.find("#### ", at + 1)) ++headers;
  EXPECT_EQ(headers, space.size()) << out.substr(0, 2000);
  EXPECT_TRUE(contains(out, "#### " + op + " triton " + space.back().label() + "\n")) << out.substr(0, 2000);
  EXPECT_TRUE(contains(out, codegen::emit_program(analysis, space.back(), codegen::Target::triton).program));
  auto [all_status, all] = kforge::run_command({tool, "dump", op});
  EXPECT_EQ(all_status, 0);
  EXPECT_TRUE(contains(all, " opencl ") && contains(all, " cuda ") && contains(all, " triton ")) << "every target";

  auto [past_status, past] =
      kforge::run_command({tool, "emit", op, std::to_string(space.size()), "--target", "triton"});
  EXPECT_EQ(past_status, 2) << past;
  EXPECT_TRUE(contains(past, "is past the op's " + std::to_string(space.size()) + " triton schedules")) << past;
}

// `bench --filter A,B` measures the ops whose path contains any of the substrings, and
// `--first-schedules` tries the head of each op's space instead of picks spread over it (how
// a GPU run times a new family of schedules put first). OpenCL on PoCL, one trial.
TEST(CodegenTargets, BenchSelectsOpsByAnyFilterAndCanTryTheFirstSchedules) {
  const std::string tool = std::string(KFORGE_BIN_DIR) + "/kforge-codegen";
  const std::string out = ::testing::TempDir() + "/bench_filter.json";
  auto [status, log] = kforge::run_command({tool, "bench", "--suite", std::string(KFORGE_SOURCE_DIR) + "/suite",
                                            "--filter", "level1/relu.json,level1/sigmoid.json", "--max-schedules", "2",
                                            "--first-schedules", "--trials", "1", "--time-budget", "0.05", "--out", out});
  ASSERT_EQ(status, 0) << log;
  std::ifstream file(out);
  const auto result = nlohmann::json::parse(file);
  std::set<std::string> names;
  for (const auto& row : result["ops"]) names.insert(row["name"].get<std::string>());
  EXPECT_EQ(names, (std::set<std::string>{"relu", "sigmoid"})) << log;
  const auto space = codegen::schedule_space(codegen::analyze(kforge::testing::suite_op("relu")), codegen::Target::opencl);
  ASSERT_GE(space.size(), 3u);
  for (const auto& row : result["ops"]) {
    if (row["name"] != "relu") continue;
    ASSERT_EQ(row["variants"].size(), 2u) << row.dump(1);
    EXPECT_EQ(row["variants"][0]["schedule"], space[0].label());
    EXPECT_EQ(row["variants"][1]["schedule"], space[1].label()) << "the head of the space, not a spread pick";
  }
  EXPECT_TRUE(contains(result["protocol"].get<std::string>(), "first in the op's space"));
}

// CUDA pointwise kernels vectorize over operands broadcast along the rows: a bias of the row's
// length is one float4 load per run of 4 outputs, a per-row scale one scalar load, and rows whose
// length is not a multiple of 4 go one element at a time (the extra shapes check that path).
TEST(CodegenTargets, CudaPointwiseVectorizesOverRowBroadcastOperands) {
  auto analysis = codegen::analyze(kforge::testing::suite_op("bias_silu_scale"));  // silu(x + b) * s, b [N], s [M, 1]
  ASSERT_TRUE(analysis.ok()) << analysis.unsupported;
  codegen::Schedule schedule;
  schedule.vector_width = 4;
  auto gen = codegen::emit_program(analysis, schedule, codegen::Target::cuda);
  ASSERT_TRUE(gen.ok()) << gen.unsupported;
  EXPECT_TRUE(contains(gen.program, "reinterpret_cast<const float4*>(b + c1)")) << gen.program;
  EXPECT_TRUE(contains(gen.program, "% 4 == 0) {  // the lanes share a row")) << gen.program;
  EXPECT_TRUE(contains(gen.program, "reinterpret_cast<float4*>(out + i)")) << gen.program;
  const auto space = codegen::schedule_space(analysis, codegen::Target::cuda);
  EXPECT_TRUE(std::any_of(space.begin(), space.end(), [](const codegen::Schedule& s) { return s.vector_width == 4; }));
  // An operand read across the row (a transposed view) keeps the scalar form.
  auto transposed = codegen::analyze(kforge::testing::suite_op("transpose2d"));
  ASSERT_TRUE(transposed.ok());
  EXPECT_FALSE(codegen::emit_program(transposed, schedule, codegen::Target::cuda).ok());
}

// CUDA row reductions (a block per row) read the row in its last pass with __ldcs (streaming,
// evict-first), the passes before with plain loads: a softmax streams only its store loop, a
// one-pass dot product both operands. OpenCL keeps plain loads.
TEST(CodegenTargets, CudaRowReductionsStreamTheirLastPass) {
  codegen::Schedule rows;  // work_group 256, a block per row
  auto softmax = codegen::emit_program(codegen::analyze(kforge::testing::suite_op("softmax_temperature")), rows,
                                       codegen::Target::cuda);
  ASSERT_TRUE(softmax.ok()) << softmax.unsupported;
  EXPECT_EQ(count(softmax.program, "__ldcs(&x["), 1u) << softmax.program;
  EXPECT_EQ(count(softmax.program, "= x[base + col]"), 2u) << "the max and sum passes\n" << softmax.program;
  const auto dot = codegen::analyze(kforge::testing::suite_op("dot_rows"));
  auto cuda_dot = codegen::emit_program(dot, rows, codegen::Target::cuda);
  ASSERT_TRUE(cuda_dot.ok()) << cuda_dot.unsupported;
  EXPECT_EQ(count(cuda_dot.program, "__ldcs("), 2u) << cuda_dot.program;
  EXPECT_EQ(count(codegen::emit_program(dot, rows, codegen::Target::opencl).program, "__ldcs"), 0u);
}

TEST(CodegenTargets, CudaFullReductionsReadFloat4WhereOperandsAreInOrder) {
  const auto mse = codegen::analyze(kforge::testing::suite_op("mse_loss"));
  auto space = codegen::schedule_space(mse, codegen::Target::cuda);
  ASSERT_FALSE(space.empty());
  EXPECT_EQ(space[0].vector_width, 4) << space[0].label();
  auto program = codegen::emit_program(mse, space[0], codegen::Target::cuda);
  ASSERT_TRUE(program.ok()) << program.unsupported;
  const std::string& text = program.program;
  for (const char* buffer : {"x", "y"})
    EXPECT_NE(text.find(std::string("reinterpret_cast<const float4*>(") + buffer + ")[i4]"), std::string::npos)
        << buffer << "\n" << text;
  EXPECT_NE(text.find(" / 4) * 4 + "), std::string::npos) << "a scalar loop takes the last n % 4\n" << text;
  // An operand broadcast over the reduced tensor (y along the last dim) is read through
  // coordinates: no float4 form, and the space keeps the scalar one.
  spec::OpSpec broadcast = kforge::testing::suite_op("mse_loss");
  broadcast.inputs.at(1).shape = {broadcast.inputs.at(0).shape.back()};
  broadcast.extra_shapes.clear();
  const auto row_bias = codegen::analyze(broadcast);
  ASSERT_TRUE(row_bias.ok()) << row_bias.unsupported;
  codegen::Schedule vec4;
  vec4.vector_width = 4;
  auto refused = codegen::emit_program(row_bias, vec4, codegen::Target::cuda);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.unsupported.find("float4"), std::string::npos) << refused.unsupported;
  auto scalar_space = codegen::schedule_space(row_bias, codegen::Target::cuda);
  ASSERT_FALSE(scalar_space.empty());
  EXPECT_EQ(scalar_space[0].vector_width, 1) << scalar_space[0].label();
}

TEST(CodegenTargets, CudaDividesByALiteralOrARowValueThroughItsReciprocal) {
  const auto softmax = codegen::analyze(kforge::testing::suite_op("softmax_temperature"));  // softmax(x / 0.7)
  codegen::Schedule rows;  // a block per row, passes over memory
  auto cuda = codegen::emit_program(softmax, rows, codegen::Target::cuda);
  ASSERT_TRUE(cuda.ok()) << cuda.unsupported;
  EXPECT_EQ(cuda.program.find(" / 0.7f"), std::string::npos) << cuda.program;
  EXPECT_NE(cuda.program.find(" * 1.42857143f"), std::string::npos) << cuda.program;
  // The row's sum: one reciprocal before the store loop, a product per element.
  const size_t reciprocal = cuda.program.find("= 1.0f / acc1;");
  ASSERT_NE(reciprocal, std::string::npos) << cuda.program;
  EXPECT_LT(reciprocal, cuda.program.rfind("for (int col = lid;")) << cuda.program;
  // OpenCL keeps its divisions (PoCL's numbers stay as they were).
  auto opencl = codegen::emit_program(softmax, rows, codegen::Target::opencl);
  ASSERT_TRUE(opencl.ok()) << opencl.unsupported;
  EXPECT_NE(opencl.program.find(" / 0.7f"), std::string::npos) << opencl.program;
  // A divisor that varies along the row stays a division (softsign: x / (1 + |x|)).
  auto softsign = codegen::emit_program(codegen::analyze(kforge::testing::suite_op("softsign")), codegen::Schedule{},
                                        codegen::Target::cuda);
  ASSERT_TRUE(softsign.ok()) << softsign.unsupported;
  EXPECT_NE(softsign.program.find(" / "), std::string::npos) << softsign.program;
}

TEST(CodegenTargets, CudaRowReductionsHoldARowThatFitsInRegisters) {
  const auto softmax = codegen::analyze(kforge::testing::suite_op("softmax_temperature"));  // rows of 2048
  auto space = codegen::schedule_space(softmax, codegen::Target::cuda);
  ASSERT_FALSE(space.empty());
  EXPECT_EQ(space[0].row_regs, 8) << "2048 elements over 256 threads first: " << space[0].label();
  EXPECT_EQ(space[0].work_group, 256);
  EXPECT_TRUE(std::any_of(space.begin(), space.end(), [](const codegen::Schedule& s) { return s.row_regs == 0; }))
      << "the passes over memory stay in the space";
  auto program = codegen::emit_program(softmax, space[0], codegen::Target::cuda);
  ASSERT_TRUE(program.ok()) << program.unsupported;
  const std::string& text = program.program;
  EXPECT_EQ(count(text, "float x_row[8];"), 1u) << text;
  EXPECT_EQ(count(text, "x_row[j] = col < "), 1u) << "one load of the row\n" << text;
  EXPECT_EQ(count(text, "= x_row[j];"), 3u) << "the max, sum and store passes read registers\n" << text;
  EXPECT_EQ(count(text, "<= 256 * 8) {"), 1u) << "a runtime check sends longer rows to the passes over memory\n" << text;
  EXPECT_EQ(count(text, "= x[base + col]"), 2u) << "the passes over memory remain for longer rows\n" << text;
  // Rows with an operand along the row (layer norm's weight and bias) read it from memory in
  // the registers' loop; only the row itself is held.
  const auto norm = codegen::analyze(kforge::testing::suite_op("layer_norm"));
  codegen::Schedule held;
  held.row_regs = 4;
  auto norm_program = codegen::emit_program(norm, held, codegen::Target::cuda);
  ASSERT_TRUE(norm_program.ok()) << norm_program.unsupported;
  EXPECT_EQ(count(norm_program.program, "_row[4];"), 1u) << norm_program.program;
  // Only CUDA blocks per row along the last dim hold a row.
  auto opencl = codegen::emit_program(norm, held, codegen::Target::opencl);
  EXPECT_FALSE(opencl.ok());
  EXPECT_NE(opencl.unsupported.find("row_regs"), std::string::npos) << opencl.unsupported;
  held.reduce = codegen::ReduceStrategy::item;
  EXPECT_FALSE(codegen::emit_program(norm, held, codegen::Target::cuda).ok());
}
