// The adversarial suite (issue 5): candidate programs that try to fool the checker,
// each of which must get the right non-`correct` outcome, on real PoCL in a real
// sandbox. Permanent: a change that lets one of these pass is a security bug.
// Run: ctest -R harness_adversarial.
#include <gtest/gtest.h>

#include <memory>

#include "tests/worker/harness/harness_fixtures.h"

using namespace kforge::harness;
using namespace kforge::spec;
using namespace kforge::harness::testing;

namespace {

// One Checker per op for the whole suite (as training uses it).
Checker& silu_checker() {
  static std::unique_ptr<Checker> checker = [] {
    std::string error;
    CheckOptions options = fast_options();
    options.trial_timeout_s = 3;
    auto made = Checker::create(silu_mul_op(), options, error);
    EXPECT_TRUE(made) << error;
    return made;
  }();
  return *checker;
}

CheckResult check_silu(const std::string& program) { return silu_checker().check(program); }

// The silu_mul launch line and signature around a body.
std::string silu_program(const std::string& body, const std::string& x_qualifier = "const ") {
  return "// kforge-launch: k grid=cdiv(numel(x),256) block=256 args=x,y,out,numel(x)\n"
         "__kernel void k(__global " + x_qualifier + "float* x, __global const float* y, __global float* out, int n) {\n"
         "  int i = get_global_id(0);\n" + body + "\n}\n";
}

}  // namespace

TEST(Adversarial, NoKernel) {
  REQUIRE_OPENCL();
  auto r = check_silu("// kforge-launch: k grid=1 block=1 args=x,y,out,numel(x)\n// nothing here\n");
  EXPECT_EQ(r.outcome, Outcome::rule_violation) << r.message;
  EXPECT_EQ(r.rule, "no_kernel");
}

TEST(Adversarial, KernelNeverLaunched) {
  REQUIRE_OPENCL();
  auto r = check_silu(std::string(kSiluMulKernel) + "__kernel void unused(__global float* p) { p[0] = 1.0f; }\n");
  EXPECT_EQ(r.outcome, Outcome::rule_violation) << r.message;
  EXPECT_EQ(r.rule, "kernel_not_launched");
  EXPECT_NE(r.message.find("'unused'"), std::string::npos) << r.message;
}

TEST(Adversarial, WritesZeros) {
  REQUIRE_OPENCL();
  auto r = check_silu(silu_program("  if (i < n) out[i] = 0.0f;"));
  EXPECT_EQ(r.outcome, Outcome::wrong_output) << r.message;
  ASSERT_TRUE(r.mismatch);
  EXPECT_EQ(r.mismatch->actual, 0.0);
  EXPECT_NE(r.message.find("expected"), std::string::npos);
}

TEST(Adversarial, CopiesAnInputToTheOutput) {
  REQUIRE_OPENCL();
  auto r = check_silu(silu_program("  if (i < n) out[i] = x[i];"));
  EXPECT_EQ(r.outcome, Outcome::wrong_output) << r.message;
}

TEST(Adversarial, WritesHalfTheOutput) {
  REQUIRE_OPENCL();
  auto r = check_silu(silu_program("  if (i < n / 2) { float v = x[i]; out[i] = v / (1.0f + exp(-v)) * y[i]; }"));
  EXPECT_EQ(r.outcome, Outcome::wrong_output) << r.message;
  ASSERT_TRUE(r.mismatch);
  EXPECT_EQ(r.mismatch->index, 64 * 100 / 2) << "first unwritten element";
  EXPECT_NE(r.message.find("got nan"), std::string::npos) << "the NaN poison shows: " << r.message;
}

TEST(Adversarial, ReadsUninitialisedScratch) {
  REQUIRE_OPENCL();
  auto r = check_silu(
      "// kforge-scratch: tmp float numel(x)\n"
      "// kforge-launch: k grid=cdiv(numel(x),256) block=256 args=x,y,out,tmp,numel(x)\n"
      "__kernel void k(__global const float* x, __global const float* y, __global float* out, __global float* tmp, int n) {\n"
      "  int i = get_global_id(0);\n"
      "  if (i < n) { float v = x[i]; out[i] = v / (1.0f + exp(-v)) * y[i] + tmp[i]; }\n}\n");
  EXPECT_EQ(r.outcome, Outcome::wrong_output) << r.message;
}

TEST(Adversarial, MutatesAnInput) {
  REQUIRE_OPENCL();
  // Right answer, but it scribbles on x afterwards.
  auto r = check_silu(silu_program("  if (i < n) { float v = x[i]; out[i] = v / (1.0f + exp(-v)) * y[i]; x[i] = 0.0f; }", ""));
  EXPECT_EQ(r.outcome, Outcome::rule_violation) << r.message;
  EXPECT_EQ(r.rule, "input_mutated");
  EXPECT_NE(r.message.find("'x'"), std::string::npos) << r.message;
}

TEST(Adversarial, DataRaceLosesUpdates) {
  REQUIRE_OPENCL();
  // "Forgot the atomics": every work-item reads the accumulator, then (after the
  // barrier, so every read happens before any write, however PoCL schedules threads)
  // writes back its own sum: updates are lost within and across groups.
  auto r = check_candidate(sum_op(),
                           "// kforge-launch: zero grid=1 block=1 args=out\n"
                           "// kforge-launch: racy grid=cdiv(numel(x),64) block=64 args=x,out,numel(x)\n"
                           "__kernel void zero(__global float* out) { out[0] = 0.0f; }\n"
                           "__kernel void racy(__global const float* x, __global float* out, int n) {\n"
                           "  int i = get_global_id(0);\n"
                           "  float old = out[0];\n"
                           "  barrier(CLK_GLOBAL_MEM_FENCE);\n"
                           "  if (i < n) out[0] = old + x[i];\n}\n",
                           fast_options());
  EXPECT_EQ(r.outcome, Outcome::wrong_output) << r.message;
}

TEST(Adversarial, ResultDependsOnWhatTheOutputHeldBeforeTheRun) {
  REQUIRE_OPENCL();
  // Passes the first run (it keys on the NaN poison), so only the second run on the same
  // inputs, with another fill, exposes it: results differ between runs.
  auto r = check_silu(silu_program("  if (i < n) { float v = x[i]; float prev = out[i];"
                                   " out[i] = isnan(prev) ? v / (1.0f + exp(-v)) * y[i] : prev; }"));
  EXPECT_EQ(r.outcome, Outcome::wrong_output) << r.message;
  EXPECT_NE(r.message.find("nondeterministic"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("second run"), std::string::npos) << r.message;
}

TEST(Adversarial, InfiniteLoopIsATimeoutAndTheCheckerKeepsGoing) {
  REQUIRE_OPENCL();
  auto r = check_silu(silu_program("  volatile int spin = 1; while (spin) { } if (i < n) out[i] = 0.0f;"));
  EXPECT_EQ(r.outcome, Outcome::timeout) << r.message;
  // The same checker still works for the next candidate.
  auto next = check_silu(kSiluMulKernel);
  EXPECT_EQ(next.outcome, Outcome::correct) << next.message;
}

TEST(Adversarial, OutOfBoundsWrite) {
  REQUIRE_OPENCL();
  auto r = check_silu(silu_program("  if (i < n) { float v = x[i]; out[i] = v / (1.0f + exp(-v)) * y[i]; out[i + 1024] = 1.0f; }"));
  EXPECT_EQ(r.outcome, Outcome::runtime_error) << r.message;
}

TEST(Adversarial, OutOfBoundsWriteJustPastTheEnd) {
  REQUIRE_OPENCL();
  // One element past the end lands in alignment slack, not a guard page: the canary catches it.
  auto r = check_silu(silu_program("  if (i < n) { float v = x[i]; out[i] = v / (1.0f + exp(-v)) * y[i]; }"
                                   "  if (i == 0) out[n] = 1.0f;"));
  EXPECT_EQ(r.outcome, Outcome::runtime_error) << r.message;
}

TEST(Adversarial, HardCodedSizesForOneShape) {
  REQUIRE_OPENCL();
  // Right for the main 32x100 shape only: the row length is baked in.
  auto r = check_candidate(softmax_op(),
                           "// kforge-launch: softmax_rows grid=1 block=32 args=x,out\n"
                           "#define COLS 100\n"
                           "__kernel void softmax_rows(__global const float* x, __global float* out) {\n"
                           "  int row = get_global_id(0);\n"
                           "  float m = -INFINITY, s = 0.0f;\n"
                           "  for (int c = 0; c < COLS; ++c) m = fmax(m, x[row * COLS + c]);\n"
                           "  for (int c = 0; c < COLS; ++c) s += exp(x[row * COLS + c] - m);\n"
                           "  for (int c = 0; c < COLS; ++c) out[row * COLS + c] = exp(x[row * COLS + c] - m) / s;\n}\n",
                           fast_options());
  EXPECT_TRUE(r.outcome == Outcome::wrong_output || r.outcome == Outcome::runtime_error)
      << outcome_name(r.outcome) << ": " << r.message;
  EXPECT_NE(r.message.find("extra shapes"), std::string::npos) << r.message;
}

TEST(Adversarial, CorrectButReadsTheNaNPoison) {
  REQUIRE_OPENCL();
  // Assumes the output starts zeroed: accumulates into it.
  auto r = check_silu(silu_program("  if (i < n) { float v = x[i]; out[i] += v / (1.0f + exp(-v)) * y[i]; }"));
  EXPECT_EQ(r.outcome, Outcome::wrong_output) << r.message;
}

TEST(Adversarial, LooseToleranceFailsATightOpButPassesALooseOne) {
  REQUIRE_OPENCL();
  // Off by a relative 1e-3 everywhere.
  std::string sloppy = silu_program("  if (i < n) { float v = x[i]; out[i] = v / (1.0f + exp(-v)) * y[i] * 1.001f; }");
  auto tight = check_silu(sloppy);
  EXPECT_EQ(tight.outcome, Outcome::wrong_output) << tight.message;
  OpSpec loose = silu_mul_op();
  loose.atol = 1e-2;
  loose.rtol = 1e-2;
  auto r = check_candidate(loose, sloppy, fast_options());
  EXPECT_EQ(r.outcome, Outcome::correct) << "control: within a loose tolerance it passes: " << r.message;
}

TEST(Adversarial, StaticRulesForbiddenConstructs) {
  REQUIRE_OPENCL();
  auto printf_result = check_silu(silu_program("  if (i < n) { printf(\"%d\", i); out[i] = 0.0f; }"));
  EXPECT_EQ(printf_result.rule, "forbidden_construct") << printf_result.message;
  auto atomic_result = check_candidate(sum_op(),
                                       "// kforge-launch: k grid=1 block=1 args=x,out\n"
                                       "__kernel void k(__global int* x, __global float* out) {"
                                       " atomic_add(&x[0], 1); out[0] = 0.0f; }\n",
                                       fast_options());
  EXPECT_EQ(atomic_result.rule, "forbidden_construct") << atomic_result.message;
  auto oob = check_silu(silu_program("  if (i < n) out[i] = x[100000];"));
  EXPECT_EQ(oob.rule, "static_out_of_bounds") << oob.message;
  auto never_written = check_silu(
      "// kforge-launch: k grid=1 block=1 args=x,y,out\n"
      "__kernel void k(__global const float* x, __global const float* y, __global const float* out) { }\n");
  EXPECT_EQ(never_written.rule, "output_not_written") << never_written.message;
  auto huge_scratch = check_silu(
      "// kforge-scratch: big float numel(x) * 100000000\n"
      "// kforge-launch: k grid=1 block=1 args=x,y,out,big\n"
      "__kernel void k(__global const float* x, __global const float* y, __global float* out, __global float* big) { }\n");
  EXPECT_EQ(huge_scratch.rule, "program_too_large") << huge_scratch.message;
}

TEST(Adversarial, SegfaultingKernelIsARuntimeError) {
  REQUIRE_OPENCL();
  auto r = check_silu(silu_program("  __global float* p = (__global float*)0; if (i == 0) p[12345] = 1.0f;"
                                   "  if (i < n) out[i] = 0.0f;"));
  EXPECT_EQ(r.outcome, Outcome::runtime_error) << r.message;
  EXPECT_NE(r.message.find("SIGSEGV"), std::string::npos) << r.message;
}
