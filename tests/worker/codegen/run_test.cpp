// Teacher kernels on the real device (PoCL here): for every suite op the teacher
// lowers, two schedules of its space run on the op's extra (odd)
// shapes and must match the libtorch reference within the op's tolerance. A lowered
// op with a wrong kernel fails; coverage must reach 85% per level.
// Run: ctest -R codegen_run (minutes: a few hundred PoCL builds).
#include <gtest/gtest.h>

#include <map>

#include "tests/worker/codegen/suite_ops.h"
#include "worker/codegen/cl_smoke.h"
#include "worker/codegen/codegen.h"

using namespace kforge;

TEST(CodegenRun, SmokeRunnerCatchesAWrongKernel) {
  std::string error;
  auto runner = codegen::SmokeRunner::create(error);
  if (!runner) GTEST_SKIP() << "no OpenCL device: " << error;
  auto spec = kforge::testing::suite_op("relu");
  auto analysis = codegen::analyze(spec);
  auto gen = codegen::emit_program(analysis, codegen::Schedule{});
  ASSERT_TRUE(gen.ok());
  // Break the kernel: relu -> identity. The comparison must notice.
  std::string broken = gen.program;
  broken.replace(broken.find("fmax(v0, 0.0f)"), 14, "v0");
  auto shapes = spec.extra_shapes[0];
  auto inputs = harness::make_inputs(spec, shapes, 3);
  std::string ref_error;
  auto reference = harness::Reference::compile(spec, ref_error);
  ASSERT_TRUE(reference) << ref_error;
  auto expected = reference->run(inputs).outputs.at(0);
  auto good = runner->run(harness::parse_program(gen.program).program, {"x"}, inputs, expected.shape, 0, 0);
  ASSERT_TRUE(good.error.empty()) << good.error;
  EXPECT_EQ(codegen::compare_outputs(expected, good.output, spec.atol, spec.rtol), "");
  auto bad = runner->run(harness::parse_program(broken).program, {"x"}, inputs, expected.shape, 0, 0);
  ASSERT_TRUE(bad.error.empty()) << bad.error;
  EXPECT_NE(codegen::compare_outputs(expected, bad.output, spec.atol, spec.rtol), "");
}

TEST(CodegenRun, EveryLoweredSuiteOpIsCorrectOnOddShapes) {
  std::string error;
  auto runner = codegen::SmokeRunner::create(error);
  if (!runner) GTEST_SKIP() << "no OpenCL device: " << error;
  std::map<int, int> ops, correct;
  for (const auto& path : kforge::testing::suite_files()) {
    int level = kforge::testing::suite_level(path);
    ++ops[level];
    auto spec = kforge::testing::load_op_file(path);
    auto analysis = codegen::analyze(spec);
    if (!analysis.ok()) continue;
    std::string ref_error;
    auto reference = harness::Reference::compile(spec, ref_error);
    ASSERT_TRUE(reference) << ref_error;
    std::vector<std::string> names;
    for (const auto& in : spec.inputs) names.push_back(in.name);
    auto space = codegen::schedule_space(analysis);
    ASSERT_FALSE(space.empty()) << path;
    bool all_ok = true;
    // The first and the one past the middle: the space is ordered by knob families, so
    // these cover vector / register-blocked and plain / tiled / group variants.
    for (const auto& schedule : {space.front(), space[std::min(space.size() - 1, space.size() / 2 + 1)]}) {
      auto gen = codegen::emit_program(analysis, schedule);
      ASSERT_TRUE(gen.ok()) << path << ": " << gen.unsupported;
      auto program = harness::parse_program(gen.program);
      ASSERT_TRUE(program.ok()) << path << ": " << program.error;
      for (size_t set_idx = 0; set_idx < spec.extra_shapes.size(); ++set_idx) {
        auto inputs = harness::make_inputs(spec, spec.extra_shapes[set_idx], 11 + set_idx);
        auto expected = reference->run(inputs);
        ASSERT_TRUE(expected.error.empty()) << path << ": " << expected.error;
        auto run = runner->run(program.program, names, inputs, expected.outputs.at(0).shape, 0, 0);
        std::string mismatch = run.error.empty()
                                   ? codegen::compare_outputs(expected.outputs[0], run.output, spec.atol, spec.rtol)
                                   : run.error;
        if (!mismatch.empty()) {
          all_ok = false;
          ADD_FAILURE() << path.stem() << " " << schedule.label() << " at "
                        << harness::shape_to_string(expected.outputs[0].shape) << ": " << mismatch << "\n"
                        << gen.program;
        }
      }
    }
    if (all_ok) ++correct[level];
  }
  for (int level : {1, 2}) {
    double coverage = double(correct[level]) / ops[level];
    std::cout << "level " << level << ": " << correct[level] << "/" << ops[level] << " ops with correct teacher kernels\n";
    EXPECT_GE(coverage, 0.85) << "level " << level;
  }
}
