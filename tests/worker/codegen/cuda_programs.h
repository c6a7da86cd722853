// Test helper: checks the teacher's cuda programs for suite ops the way the harness
// would before a GPU sees them (format, static rules, launch plan on the main shapes,
// NVRTC for sm_90). Used by codegen_targets_test and codegen_cuda_space_test.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "tests/worker/codegen/suite_ops.h"
#include "worker/codegen/codegen.h"
#ifdef KFORGE_WITH_CUDA
#include "worker/harness/cuda_backend.h"
#endif
#include "worker/harness/program.h"
#include "worker/harness/rules.h"

#ifdef KFORGE_WITH_CUDA
#define REQUIRE_NVRTC() (void)0
#else
#define REQUIRE_NVRTC() GTEST_SKIP() << "built without the cuda target (KFORGE_WITH_CUDA=OFF: no CUDA toolkit, no NVRTC)"
#endif

namespace kforge::testing {

// The output the harness would allocate, from the IR (shapes at the main shapes).
inline std::vector<harness::PlanOutput> ir_outputs(const codegen::Analysis& analysis) {
  const auto& node = analysis.graph.nodes[analysis.graph.output];
  harness::PlanOutput out;
  for (const auto& d : node.shape) out.shape.push_back(d.value);
  out.dtype = node.int_type.empty() ? spec::DType::float32 : spec::DType::int64;
  return {out};
}

// Why a cuda program fails the harness before it reaches a GPU ("" when it would run).
inline std::string cuda_problems(const spec::OpSpec& spec, const codegen::Analysis& analysis, const std::string& program) {
  auto parsed = harness::parse_program(program);
  if (!parsed.ok()) return "format: " + parsed.error;
  if (parsed.program.dialect != harness::Dialect::cuda) return "not read as a CUDA program";
  harness::BufferNames names;
  for (const auto& input : spec.inputs) names.inputs.push_back(input.name);
  if (auto violation = harness::check_static_rules(parsed.program, names))
    return "rule " + violation->rule + ": " + violation->message;
  spec::ShapeSet shapes;
  for (const auto& input : spec.inputs) shapes[input.name] = input.shape;
  harness::LaunchPlan plan;
  if (auto violation =
          harness::make_launch_plan(parsed.program, spec.inputs, shapes, ir_outputs(analysis), {}, plan))
    return "launch plan " + violation->rule + ": " + violation->message;
#ifdef KFORGE_WITH_CUDA
  std::vector<std::string> kernels;
  for (const auto& kernel : parsed.program.kernels) kernels.push_back(kernel.name);
  auto compiled = harness::nvrtc_compile(parsed.program.source, kernels, 9, 0);
  if (!compiled.ok) return "NVRTC: " + compiled.log.substr(0, 1500);
#endif
  return "";
}

//! Checks the first (or every) cuda schedule of every suite op; returns how many programs
//! passed (a failure is reported with the program).
inline int check_cuda_programs(bool every_schedule, size_t first = 0, size_t stride = 1) {
  auto started = std::chrono::steady_clock::now();
  int programs = 0;
  const auto files = suite_files();
  for (size_t file_idx = first; file_idx < files.size(); file_idx += stride) {
    const auto& path = files[file_idx];
    auto spec = load_op_file(path);
    auto analysis = codegen::analyze(spec);
    EXPECT_TRUE(analysis.ok()) << path << ": " << analysis.unsupported;
    auto space = codegen::schedule_space(analysis, codegen::Target::cuda);
    if (!every_schedule && space.size() > 1) space.resize(1);
    for (const auto& schedule : space) {
      auto gen = codegen::emit_program(analysis, schedule, codegen::Target::cuda);
      EXPECT_TRUE(gen.ok()) << path << " " << schedule.label() << ": " << gen.unsupported;
      std::string problem = cuda_problems(spec, analysis, gen.program);
      EXPECT_EQ(problem, "") << path << " " << schedule.label() << "\n" << gen.program;
      programs += problem.empty() && gen.ok();
    }
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("%d cuda programs compiled for sm_90 in %.1f s\n", programs, seconds);
  return programs;
}

}  // namespace kforge::testing
