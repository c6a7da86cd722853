// The checker's three targets through the real children: a Triton module in the Python
// runner (Triton's CPU interpreter here, CUDA on a GPU host), checked, timed, and its
// timed outputs verified; a program in the wrong dialect for its target is a format error;
// the cuda target without a driver fails with the reason. Test: ctest -R harness_checker_targets.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tests/worker/harness/harness_fixtures.h"

namespace kforge::harness::testing {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string triton_source(const std::string& name) {
  return read_text(std::string(KFORGE_SOURCE_DIR) + "/tests/worker/harness/triton/" + name);
}

spec::OpSpec add_op() {
  spec::OpSpec op;
  op.name = "add";
  op.source = "def forward(x: Tensor, y: Tensor) -> Tensor:\n    return x + y\n";
  op.inputs = {input("x", {64, 100}), input("y", {64, 100})};
  op.extra_shapes = {{{"x", {33, 7}}, {"y", {33, 7}}}};
  op.atol = 1e-5;
  op.rtol = 1e-5;
  return op;
}

CheckOptions triton_options(const std::string& python) {
  CheckOptions options = fast_options();
  options.target = "triton";
  options.device = "cpu";  // Triton's CPU interpreter
  options.python = python;
  options.trials = 2;
  return options;
}

TEST(CheckerTargets, TritonModuleIsCheckedAndItsTimedOutputsVerified) {
  REQUIRE_TRITON(python);
  CheckOptions options = triton_options(python);
  options.time = true;
  auto result = check_candidate(add_op(), triton_source("good_add.py"), options);
  ASSERT_EQ(result.outcome, Outcome::correct) << result.message;
  EXPECT_EQ(result.trials_passed, 4) << "2 fresh seeds, the secret seed and one extra shape set";
  ASSERT_TRUE(result.kernel);
  EXPECT_GT(result.kernel->median_ms, 0);
  ASSERT_TRUE(result.baseline) << "on a CPU device the baseline is libtorch eager";
  EXPECT_EQ(result.environment.target, "triton");
  EXPECT_FALSE(result.environment.gpu);
  EXPECT_NE(result.to_json().find("\"speedup_vs_eager\""), std::string::npos);
}

TEST(CheckerTargets, TritonHacksGetTheRightOutcome) {
  REQUIRE_TRITON(python);
  std::string error;
  auto checker = Checker::create(add_op(), triton_options(python), error);
  ASSERT_TRUE(checker) << error;
  struct Case {
    const char* file;
    Outcome outcome;
    const char* rule;
  };
  for (const Case& c : {Case{"torch_fallback.py", Outcome::rule_violation, "torch_compute"},
                        Case{"decoy_never_launched.py", Outcome::rule_violation, "no_triton_launch"},
                        Case{"skip_write.py", Outcome::wrong_output, ""},
                        Case{"mutate_input.py", Outcome::rule_violation, "input_mutated"},
                        Case{"cache_global.py", Outcome::wrong_output, ""},
                        Case{"banned_import.py", Outcome::rule_violation, "banned_import"},
                        Case{"stream_side.py", Outcome::rule_violation, "banned_torch"},
                        Case{"private_attr.py", Outcome::rule_violation, "private_name"}}) {
    auto result = checker->check(triton_source(c.file));
    EXPECT_EQ(result.outcome, c.outcome) << c.file << ": " << result.message;
    EXPECT_EQ(result.rule, c.rule) << c.file << ": " << result.message;
  }
  auto broken = checker->check("def forward(x, y:\n");
  EXPECT_EQ(broken.outcome, Outcome::compile_error) << broken.message;
}

TEST(CheckerTargets, ProgramInTheOtherDialectIsAFormatError) {
  REQUIRE_OPENCL();
  CheckOptions options = fast_options();
  auto result = check_candidate(silu_mul_op(),
                                "// kforge-launch: k grid=cdiv(numel(x),256) block=256 args=x,y,out,numel(x)\n"
                                "extern \"C\" __global__ void k(const float* x, const float* y, float* out, int n) {}\n",
                                options);
  EXPECT_EQ(result.outcome, Outcome::format_error) << result.message;
  EXPECT_NE(result.message.find("CUDA program"), std::string::npos) << result.message;
}

TEST(CheckerTargets, CudaWithoutADriverSaysSo) {
  CheckOptions options = fast_options();
  options.target = "cuda";
  std::string error;
  auto checker = Checker::create(silu_mul_op(), options, error);
  if (checker) GTEST_SKIP() << "this host has a CUDA GPU: the gpu-labelled tests cover it";
  EXPECT_NE(error.find("CUDA"), std::string::npos) << error;
}

}  // namespace
}  // namespace kforge::harness::testing
