// The adversarial suite (issue 5): candidate programs that try to fool the checker,
// each of which must get the right non-`correct` outcome, on real PoCL in a real
// sandbox. Permanent: a change that lets one of these pass is a security bug.
// The kernels of tests/worker/harness/adversarial/ (manifest.json: issue 14's attacks, each
// with the outcomes it may get) run here too; bench/security/run.sh records them in
// bench/results/security.json. Run: ctest -R harness_adversarial.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

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

namespace {

std::string read_source_file(const std::string& relative) {
  std::ifstream in(std::string(KFORGE_SOURCE_DIR) + "/" + relative, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Whether `result` is one of the manifest's allowed outcomes: an outcome name, or
// correct_inert (correct: the trick never triggers) or correct_weak (correct only on a weak
// test, which earns no correctness reward).
bool allowed(const CheckResult& result, const nlohmann::json& expect) {
  for (const auto& name : expect) {
    const std::string want = name.get<std::string>();
    if (want == "correct_inert" && result.outcome == Outcome::correct) return true;
    if (want == "correct_weak" && result.outcome == Outcome::correct && result.weak_test) return true;
    if (want == outcome_name(result.outcome)) return true;
  }
  return false;
}

}  // namespace

TEST(Adversarial, EveryRegressionKernelInTheFolderGetsItsOutcome) {
  REQUIRE_OPENCL();
  const std::string escape_marker = "/tmp/kforge-adversarial-escape";
  std::filesystem::remove(escape_marker);
  auto manifest = nlohmann::json::parse(read_source_file("tests/worker/harness/adversarial/manifest.json"));
  std::map<std::string, std::unique_ptr<Checker>> checkers;
  for (const auto& entry : manifest["kernels"]) {
    const std::string op_path = entry["op"], file = entry["file"];
    auto& checker = checkers[op_path];
    if (!checker) {
      auto parsed = parse_op_spec(read_source_file(op_path));
      ASSERT_TRUE(parsed.ok()) << op_path;
      std::string error;
      CheckOptions options = fast_options();
      options.trial_timeout_s = 5;
      checker = Checker::create(parsed.spec, options, error);
      ASSERT_TRUE(checker) << error;
    }
    CheckResult result = checker->check(read_source_file(file));
    EXPECT_TRUE(allowed(result, entry["expect"]))
        << file << " (" << entry["attack"].get<std::string>() << "): got " << outcome_name(result.outcome)
        << ", expected one of " << entry["expect"].dump() << ": " << result.message;
    if (!entry["rule"].get<std::string>().empty()) EXPECT_EQ(result.rule, entry["rule"].get<std::string>()) << file;
    EXPECT_NO_THROW(nlohmann::json::parse(result.to_json())) << file;
  }
  EXPECT_FALSE(std::filesystem::exists(escape_marker)) << "a kernel created a file on the host";
}

TEST(Adversarial, NoByteValueMakesTheCheckerThrow) {
  REQUIRE_OPENCL();
  // Every byte value alone, and inside an otherwise valid program, through the parser and
  // rules (no sandbox needed for these); then a few through the whole pipeline.
  for (int byte = 0; byte < 256; ++byte) {
    std::string alone(1, static_cast<char>(byte));
    std::string in_comment = std::string(kSiluMulKernel) + "// " + alone + "\n";
    for (const std::string& text : {alone, in_comment, std::string(64, static_cast<char>(byte))}) {
      if (byte >= 0x20 && byte < 0x7F && text == in_comment) continue;  // a printable comment: a real check
      CheckResult result;
      ASSERT_NO_THROW(result = silu_checker().check(text)) << "byte " << byte;
      ASSERT_NO_THROW(nlohmann::json::parse(result.to_json())) << "byte " << byte;
      if (text != in_comment) EXPECT_NE(result.outcome, Outcome::correct) << "byte " << byte;
    }
  }
  CheckResult garbled;
  garbled.message = "child said: ";
  for (int byte = 0; byte < 256; ++byte) garbled.message += static_cast<char>(byte);
  std::string text;
  ASSERT_NO_THROW(text = garbled.to_json());
  EXPECT_NO_THROW(nlohmann::json::parse(text));
}
