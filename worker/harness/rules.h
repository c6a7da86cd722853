// Static rules (the rule-based reward) and launch planning: checks a parsed
// program against the op before anything is compiled, and resolves its launches
// for one shape set into a LaunchPlan the sandbox executes. Each violation has a
// name (docs/kernel-format.md) and a message. Test: ctest -R 'harness_(adversarial|cl_backend)'.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "spec/op_spec.h"
#include "worker/harness/program.h"

namespace kforge::harness {

//! A named rule violation, e.g. {"kernel_not_launched", "kernel 'helper' (line 7) is declared but never launched"}.
struct RuleViolation {
  std::string rule;
  std::string message;
};

//! The buffers a program sees: inputs (name, dtype) and outputs (count, dtypes) of the op.
struct BufferNames {
  std::vector<std::string> inputs;
  size_t output_count = 1;
};

//! Limits on program size (program_too_large).
struct ProgramLimits {
  size_t max_source_bytes = 64 * 1024;
  size_t max_launches = 16;
  size_t max_kernels = 16;
  size_t max_scratch_buffers = 8;
  int64_t max_scratch_bytes = int64_t{1} << 30;
  int64_t max_work_items = int64_t{1} << 31;
  int64_t max_block = 1024;  //!< work-items per group (the device's limit when known)
};

//! Shape-independent rules. Returns the first violation, or nullopt.
std::optional<RuleViolation> check_static_rules(const KernelProgram& program, const BufferNames& names,
                                                const ProgramLimits& limits = {});

//! One buffer the sandbox allocates.
struct PlanBuffer {
  enum class Role { input, output, scratch };
  std::string name;
  Role role = Role::input;
  int index = 0;      //!< input or output index (scratch: its declaration index)
  int64_t bytes = 0;  //!< data size
};

//! One kernel argument, resolved.
struct PlanArg {
  enum class Kind { buffer, i32, i64, f32, f64 };
  Kind kind = Kind::buffer;
  int buffer = -1;  //!< index into LaunchPlan::buffers
  int64_t integer = 0;
  double real = 0;
};

//! One launch with sizes resolved.
struct PlanLaunch {
  std::string kernel;
  int line = 0;
  int dims = 1;
  int64_t global[3] = {1, 1, 1};  //!< grid * block
  int64_t local[3] = {1, 1, 1};   //!< block
  std::vector<PlanArg> args;
};

//! Everything the sandbox needs to run a program for one shape set.
struct LaunchPlan {
  std::vector<PlanBuffer> buffers;  //!< inputs, then outputs, then scratch
  std::vector<PlanLaunch> launches;
};

//! Output description for planning.
struct PlanOutput {
  std::vector<int64_t> shape;
  spec::DType dtype = spec::DType::float32;
};

//! Resolves launches for one shape set: evaluates expressions, binds args to parameter
//! types, applies size limits and the shape-dependent rules (static_out_of_bounds).
//! Returns the plan, or a violation.
std::optional<RuleViolation> make_launch_plan(const KernelProgram& program, const std::vector<spec::InputSpec>& inputs,
                                              const spec::ShapeSet& input_shapes, const std::vector<PlanOutput>& outputs,
                                              const ProgramLimits& limits, LaunchPlan& plan);

//! JSON form of a plan (what the parent sends to kforge-sandbox).
std::string launch_plan_to_json(const LaunchPlan& plan);
//! Parses launch_plan_to_json's output; false and `error` on bad input.
bool launch_plan_from_json(const std::string& json, LaunchPlan& plan, std::string& error);

}  // namespace kforge::harness
