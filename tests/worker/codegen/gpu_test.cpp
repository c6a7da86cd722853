// The teacher's cuda and triton programs on a real GPU through the harness Checker
// (NVRTC + driver API; the Python runner with compiled Triton): one op of every stage
// kind and layout (and ops of kernelbench_ops/: convs, pooling, scans, masks, losses), on the op's main shapes, with the first schedule of each
// target's space (the others are the autotuner's business: bench/gpu/run_device.sh teacher). Skipped with the reason where no NVIDIA GPU is present.
// Run: ctest -R codegen_gpu (label gpu; bench/gpu/run_device.sh test runs it on the H100).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <vector>

#include "tests/worker/codegen/suite_ops.h"
#include "tests/worker/harness/harness_fixtures.h"
#include "worker/codegen/codegen.h"

using namespace kforge;

namespace {

// The GPU the harness would use (harness::testing::have_nvidia_gpu): /dev/nvidia0 is there
// and the driver answers. (The driver is never initialised in this process: the Checker's
// children use it.)
using harness::testing::have_nvidia_gpu;

// One op: a Checker (GPU reference, sandboxes) and the first schedule's program checked;
// "" when correct on the GPU, else what went wrong.
std::string check_op_on_gpu(const char* name, const spec::OpSpec& spec, const std::string& target,
                            codegen::Target language, const codegen::Schedule* schedule = nullptr) {
  harness::CheckOptions options = harness::testing::fast_options();
  options.target = target;
  options.device = "";  // CUDA device 0
  options.python = harness::testing::interpreter_python();
  options.trials = 2;
  options.spares = 1;            // one program per Checker: no second child to start
  options.trial_timeout_s = 60;  // the first launch of a Triton kernel compiles it
  auto analysis = codegen::analyze(spec);
  if (!analysis.ok()) return std::string(name) + ": " + analysis.unsupported;
  auto space = codegen::schedule_space(analysis, language);
  if (space.empty()) return std::string(name) + ": no schedule";
  std::string error;
  auto checker = harness::Checker::create(spec, options, error);
  if (!checker) return std::string(name) + " " + target + ": " + error;
  const codegen::Schedule& chosen = schedule ? *schedule : space[0];
  auto gen = codegen::emit_program(analysis, chosen, language);
  if (!gen.ok()) return std::string(name) + ": " + gen.unsupported;
  auto result = checker->check(gen.program);
  if (result.outcome != harness::Outcome::correct)
    return std::string(name) + " " + target + " " + chosen.label() + ": " + result.message + "\n" + gen.program;
  if (!result.environment.gpu) return std::string(name) + " " + target + ": not checked on a GPU";
  return "";
}

// Every op, four at a time: each Checker spends most of its start-up importing torch in
// its runners (CPU), which 16 cores overlap, while the GPU work is small (ctest runs the
// TESTs of this file side by side too: SHARDS in tests/CMakeLists.txt).
void check_ops_on_gpu(const std::string& target, const std::vector<const char*>& names,
                      spec::OpSpec (*load)(const std::string&)) {
  unsetenv("TRITON_INTERPRET");
  codegen::Target language = codegen::Target::opencl;
  ASSERT_TRUE(codegen::parse_target(target, language));
  std::vector<std::string> failures(names.size());
  std::atomic<size_t> next{0};
  auto started = std::chrono::steady_clock::now();
  auto worker = [&] {
    for (size_t op_idx = next++; op_idx < names.size(); op_idx = next++) {
      failures[op_idx] = check_op_on_gpu(names[op_idx], load(names[op_idx]), target, language);
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      std::fprintf(stderr, "[%6.1f s] %s %s: %s\n", s, target.c_str(), names[op_idx],
                   failures[op_idx].empty() ? "correct" : "FAILED");
    }
  };
  std::vector<std::thread> pool;
  for (int thread_idx = 0; thread_idx < 4; ++thread_idx) pool.emplace_back(worker);
  for (auto& thread : pool) thread.join();
  for (size_t op_idx = 0; op_idx < names.size(); ++op_idx) EXPECT_EQ(failures[op_idx], "") << names[op_idx];
}

// One suite op of every stage kind and layout.
const std::vector<const char*> kSuiteOps = {"silu_mul",    "add_bcast_3d", "embedding",   "cat_last",   "flip_last",
                                            "pow_tensor",  "softmax_last", "layer_norm",  "sum_dim0",   "amax_dim1_3d",
                                            "mse_loss",    "cumsum_last",  "cumsum_dim0", "argmax_last", "linear_gelu",
                                            "bmm",         "attention",    "matmul"};

// Window stages (tests/worker/codegen/kernelbench_ops): convs (implicit GEMM in triton,
// grouped, depthwise, 3-d), transposed convs, pooling, and the norms and chains around them.
const std::vector<const char*> kWindowOps = {
    "conv2d_wide_hardswish",   "conv2d_grouped_wide", "conv2d_depthwise", "conv3d_wide_relu",
    "conv_transpose2d_groups_gelu", "conv_transpose3d", "max_pool2d_relu", "avg_pool3d",
    "group_norm",              "conv2d_batch_norm_scale", "conv3d_min_softmax", "frobenius_normalize",
    "conv_transpose3d_wide_bias_relu", "conv_transpose2d_grouped_wide_dilated", "conv_transpose1d_wide_stride3"};

// The lowerings KernelBench's problems added last (scans with a product or a mask, triangular
// masks before a matmul, rank-4 matmuls, losses gathering by class index): their GPU forms;
// and the matmuls with few tiles over a long K, whose first triton schedule is split-K.
const std::vector<const char*> kKernelBenchOps = {
    "cumprod_last",        "masked_cumsum", "tril_batched_offset", "triu_matmul",
    "matmul_4d_by_2d",     "attention_4d",  "cross_entropy_gather", "kl_div_batchmean_square",
    "matmul_long_k_bias_relu", "matvec_long_k", "bmm_long_k"};

bool triton_usable(std::string& why) {
  std::string python = harness::testing::interpreter_python();
  if (harness::testing::triton_importable(python)) return true;
  why = python + " cannot import torch and triton (set KFORGE_PYTHON)";
  return false;
}

// check_ops_on_gpu, or the TEST skipped with the reason: no NVIDIA GPU, or (triton) no
// python that imports torch and triton.
void check_ops_on_gpu_or_skip(const std::string& target, const std::vector<const char*>& names,
                              spec::OpSpec (*load)(const std::string&)) {
  std::string why;
  if (!have_nvidia_gpu(why)) GTEST_SKIP() << "no NVIDIA GPU: " << why;
  if (target == "triton" && !triton_usable(why)) GTEST_SKIP() << why;
  check_ops_on_gpu(target, names, load);
}

}  // namespace

TEST(CodegenGpu, CudaProgramsOfEveryStageKindAreCorrectOnTheGpu) {
  check_ops_on_gpu_or_skip("cuda", kSuiteOps, kforge::testing::suite_op);
}

TEST(CodegenGpu, TritonProgramsOfEveryStageKindAreCorrectOnTheGpu) {
  check_ops_on_gpu_or_skip("triton", kSuiteOps, kforge::testing::suite_op);
}

TEST(CodegenGpu, WindowProgramsAreCorrectOnTheGpuInCuda) {
  check_ops_on_gpu_or_skip("cuda", kWindowOps, kforge::testing::kernelbench_op);
}

TEST(CodegenGpu, WindowProgramsAreCorrectOnTheGpuInTriton) {
  check_ops_on_gpu_or_skip("triton", kWindowOps, kforge::testing::kernelbench_op);
}

TEST(CodegenGpu, KernelBenchLoweringsAreCorrectOnTheGpuInCuda) {
  check_ops_on_gpu_or_skip("cuda", kKernelBenchOps, kforge::testing::kernelbench_op);
}

TEST(CodegenGpu, KernelBenchLoweringsAreCorrectOnTheGpuInTriton) {
  check_ops_on_gpu_or_skip("triton", kKernelBenchOps, kforge::testing::kernelbench_op);
}

// A row held in registers only where it fits (Schedule::row_regs): 256 threads of 4 hold 1024
// elements, so the main shapes' rows of 2048 take the passes over memory after the kernel's
// check, and the extra shapes' rows of 777 and 33 the registers (777: the last of a thread's
// four slots past the row's end for most threads). Both paths must be correct.
TEST(CodegenGpu, CudaRowsHeldInRegistersAndLongerRowsBothCorrect) {
  std::string why;
  if (!have_nvidia_gpu(why)) GTEST_SKIP() << "no NVIDIA GPU: " << why;
  codegen::Schedule held;  // a block of 256 per row
  held.row_regs = 4;
  for (const char* name : {"softmax_last", "layer_norm"})
    EXPECT_EQ(check_op_on_gpu(name, kforge::testing::suite_op(name), "cuda", codegen::Target::cuda, &held), "") << name;
}
