// Teacher triton programs through the harness Checker in Triton's CPU interpreter (the
// Python runner child, its rules and run-time guards, NaN-poisoned allocations, seeded +
// secret-seed trials, extra shapes, determinism): one op of every stage kind and layout,
// on its odd extra shapes, with the first schedule of its triton space and one more.
// Run: ctest -R codegen_triton_run (2-5 minutes: the interpreter runs every program instance
// in Python; needs the test venv's triton).
#include <gtest/gtest.h>

#include "tests/worker/codegen/suite_ops.h"
#include "tests/worker/harness/harness_fixtures.h"
#include "worker/codegen/codegen.h"

using namespace kforge;

namespace {

// `names` on their odd shapes, each with the first schedule of its triton space and the middle one.
void check_in_interpreter(const std::string& python, std::initializer_list<const char*> names) {
  const harness::CheckOptions options = harness::testing::interpreter_options(python);
  for (const char* name : names) {
    auto spec = kforge::testing::on_odd_shapes(kforge::testing::suite_op(name));
    auto analysis = codegen::analyze(spec);
    ASSERT_TRUE(analysis.ok()) << name << ": " << analysis.unsupported;
    auto space = codegen::schedule_space(analysis, codegen::Target::triton);
    ASSERT_FALSE(space.empty()) << name;
    std::string error;
    auto checker = harness::Checker::create(spec, options, error);
    ASSERT_TRUE(checker) << name << ": " << error;
    for (size_t pick : {size_t{0}, space.size() / 2}) {
      auto gen = codegen::emit_program(analysis, space[pick], codegen::Target::triton);
      ASSERT_TRUE(gen.ok()) << name << ": " << gen.unsupported;
      auto result = checker->check(gen.program);
      EXPECT_EQ(result.outcome, harness::Outcome::correct)
          << name << " " << space[pick].label() << ": " << result.message << "\n" << gen.program;
      if (space.size() < 2) break;
    }
  }
}

}  // namespace

// Two TESTs of about equal length (ctest runs them side by side: SHARDS 2): on a GPU host the
// whole list outlasted a 400 s device call.
// pointwise (broadcast, gather, cat, flip, pow), rows (last dim whole and chunked, dim 0,
// dim 1 of 3-d), full reduction.
TEST(CodegenTritonRun, PointwiseRowAndReductionOpsAreCorrectInTheInterpreter) {
  REQUIRE_TRITON(python);
  check_in_interpreter(python, {"silu_mul", "add_bcast_3d", "embedding", "cat_last", "flip_last", "pow_tensor",
                                "softmax_last", "layer_norm", "sum_dim0", "amax_dim1_3d", "mse_loss"});
}

// Scans and arg reduction (both layouts), matmuls with epilogues, a three-stage attention.
TEST(CodegenTritonRun, ScanArgReductionAndMatmulOpsAreCorrectInTheInterpreter) {
  REQUIRE_TRITON(python);
  check_in_interpreter(python, {"cumsum_last", "cumsum_dim0", "argmax_last", "linear_gelu", "bmm", "attention", "matvec"});
}

// Split reductions (few outputs over a long reduced dim: slices side by side, then a second
// kernel) exist only at the main shapes, where there are few outputs: emitted there and
// checked on the main shapes and the op's extra shapes (about 20 s each in the interpreter).
TEST(CodegenTritonRun, SplitReductionsAreCorrectInTheInterpreter) {
  REQUIRE_TRITON(python);
  const harness::CheckOptions options = harness::testing::interpreter_options(python);
  for (const char* name : {"sum_dim0", "mean_gelu_dim0", "amax_dim1_3d"}) {
    auto spec = kforge::testing::suite_op(name);
    auto analysis = codegen::analyze(spec);
    ASSERT_TRUE(analysis.ok()) << name << ": " << analysis.unsupported;
    auto space = codegen::schedule_space(analysis, codegen::Target::triton);
    ASSERT_FALSE(space.empty()) << name;
    ASSERT_GT(space.front().split_r, 1) << name << " " << space.front().label();
    auto gen = codegen::emit_program(analysis, space.front(), codegen::Target::triton);
    ASSERT_TRUE(gen.ok()) << name << ": " << gen.unsupported;
    std::string error;
    auto checker = harness::Checker::create(spec, options, error);
    ASSERT_TRUE(checker) << name << ": " << error;
    auto result = checker->check(gen.program);
    EXPECT_EQ(result.outcome, harness::Outcome::correct)
        << name << " " << space.front().label() << ": " << result.message << "\n" << gen.program;
  }
}
