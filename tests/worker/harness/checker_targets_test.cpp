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
  EXPECT_EQ(result.trials_passed, 5) << "2 fresh seeds, the secret seed, one extra shape set, the unpublished shapes";
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

// Checker::prefetch (the next candidate built and its kernels compiled ahead in its own
// child) must change nothing but when the JIT happens: the same verdicts, a prefetched
// program's check reads its child's replies, another program's check ignores it, and a
// prefetched hack is caught by its trials as if it had not been prefetched.
TEST(CheckerTargets, PrefetchedCandidatesGetTheSameVerdicts) {
  REQUIRE_TRITON(python);
  CheckOptions plain = triton_options(python);
  std::string error;
  auto unprefetched = Checker::create(add_op(), plain, error);
  ASSERT_TRUE(unprefetched) << error;
  EXPECT_FALSE(unprefetched->prefetch(triton_source("good_add.py"))) << "only on a GPU unless asked for";

  CheckOptions options = plain;
  options.prefetch_on_cpu = true;
  auto checker = Checker::create(add_op(), options, error);
  ASSERT_TRUE(checker) << error;
  const std::string good = triton_source("good_add.py");
  ASSERT_TRUE(checker->prefetch(good));
  EXPECT_TRUE(checker->prefetch(good)) << "the same text again keeps the child it has";
  auto result = checker->check(good);
  ASSERT_EQ(result.outcome, Outcome::correct) << result.message;
  EXPECT_EQ(result.trials_passed, 5) << "2 fresh seeds, the secret seed, one extra shape set, the unpublished shapes";
  EXPECT_GT(result.prepared_ms, 0) << "checked in the prefetched child, whose prepare replied";
  EXPECT_NE(result.to_json().find("\"prepared\""), std::string::npos);

  // A prefetch of one text, then a check of another: that one is checked in a child of its own.
  ASSERT_TRUE(checker->prefetch(triton_source("zeros.py")));
  auto other = checker->check(good + "\n# another text\n");
  EXPECT_EQ(other.outcome, Outcome::correct) << other.message;
  EXPECT_DOUBLE_EQ(other.prepared_ms, 0) << other.message;
  auto zeros = checker->check(triton_source("zeros.py"));
  EXPECT_EQ(zeros.outcome, Outcome::wrong_output) << zeros.message;
  EXPECT_GT(zeros.prepared_ms, 0) << "the earlier prefetch still stood for this text";

  // The worker's order: candidate i + 1 prefetched before candidate i (prefetched the round
  // before) is checked; both keep their children. A third text replaces the oldest.
  const std::string first = good + "\n# first\n", second = good + "\n# second\n", third = good + "\n# third\n";
  ASSERT_TRUE(checker->prefetch(first));
  ASSERT_TRUE(checker->prefetch(second));
  EXPECT_GT(checker->check(first).prepared_ms, 0);
  ASSERT_TRUE(checker->prefetch(third));
  EXPECT_GT(checker->check(second).prepared_ms, 0);
  EXPECT_GT(checker->check(third).prepared_ms, 0);
  const std::string fourth = good + "\n# fourth\n", fifth = good + "\n# fifth\n", sixth = good + "\n# sixth\n";
  ASSERT_TRUE(checker->prefetch(fourth));
  ASSERT_TRUE(checker->prefetch(fifth));
  ASSERT_TRUE(checker->prefetch(sixth));
  auto evicted = checker->check(fourth);
  EXPECT_EQ(evicted.outcome, Outcome::correct) << evicted.message;
  EXPECT_DOUBLE_EQ(evicted.prepared_ms, 0) << "the oldest of three was dropped, and checked afresh";
  EXPECT_GT(checker->check(sixth).prepared_ms, 0);

  for (const auto& [file, outcome] : {std::pair<const char*, Outcome>{"torch_fallback.py", Outcome::rule_violation},
                                      {"decoy_never_launched.py", Outcome::rule_violation},
                                      {"mutate_input.py", Outcome::rule_violation},
                                      {"cache_global.py", Outcome::wrong_output}}) {
    ASSERT_TRUE(checker->prefetch(triton_source(file))) << file;
    auto hack = checker->check(triton_source(file));
    EXPECT_EQ(hack.outcome, outcome) << file << ": " << hack.message;
  }
  // A GPU generation prefetches prefetch_ahead candidates at once: each keeps its child
  // until checked, one more replaces the oldest.
  CheckOptions deep = options;
  deep.prefetch_ahead = 3;
  auto ahead = Checker::create(add_op(), deep, error);
  ASSERT_TRUE(ahead) << error;
  std::vector<std::string> texts;
  for (const char* tag : {"a", "b", "c", "d", "e"}) texts.push_back(good + "\n# ahead " + tag + "\n");
  for (size_t idx = 0; idx < 4; ++idx) ASSERT_TRUE(ahead->prefetch(texts[idx])) << idx;
  for (size_t idx = 0; idx < 4; ++idx) EXPECT_GT(ahead->check(texts[idx]).prepared_ms, 0) << idx;
  for (size_t idx = 0; idx < 5; ++idx) ASSERT_TRUE(ahead->prefetch(texts[idx] + "#again\n")) << idx;
  EXPECT_DOUBLE_EQ(ahead->check(texts[0] + "#again\n").prepared_ms, 0) << "the oldest of five was dropped";
  EXPECT_GT(ahead->check(texts[4] + "#again\n").prepared_ms, 0);

  const std::string broken = "def forward(x, y:\n";
  ASSERT_TRUE(checker->prefetch(broken));
  auto broken_result = checker->check(broken);
  EXPECT_EQ(broken_result.outcome, Outcome::compile_error) << "the prefetched build's failure is the verdict: "
                                                          << broken_result.message;
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
