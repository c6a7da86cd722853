// Autotune through the harness (see autotune.h): every schedule checked and timed by one
// Checker, the fastest correct one kept. Test: ctest -R codegen_autotune.
#include "worker/codegen/autotune.h"

namespace kforge::codegen {

AutotuneResult autotune(const spec::OpSpec& spec, const harness::CheckOptions& options, size_t max_schedules,
                        bool spread) {
  AutotuneResult result;
  auto analysis = analyze(spec);
  if (!analysis.ok()) {
    result.unsupported = analysis.unsupported;
    return result;
  }
  // The Checker runs programs in options.target; emit in the same language.
  Target target = Target::opencl;
  if (!parse_target(options.target, target)) {
    result.unsupported = "the teacher cannot emit target '" + options.target + "'";
    return result;
  }
  std::string error;
  auto checker = harness::Checker::create(spec, options, error);
  if (!checker) {
    result.status = AutotuneStatus::reference_error;
    result.unsupported = "reference: " + error;
    return result;
  }
  auto space = schedule_space(analysis, target);
  size_t count = max_schedules == 0 ? space.size() : std::min(space.size(), max_schedules);
  std::string first_failure;
  for (size_t pick = 0; pick < count; ++pick) {
    // Spread the picks over the space, which is ordered by knob families (or take its head).
    const Schedule& schedule = space[spread ? pick * space.size() / count : pick];
    VariantResult variant;
    variant.schedule = schedule;
    auto gen = emit_program(analysis, schedule, target);
    if (!gen.ok()) continue;  // schedule_space only lists emittable schedules
    auto check = checker->check(gen.program);
    variant.outcome = harness::outcome_name(check.outcome);
    variant.check = check;
    if (check.outcome == harness::Outcome::correct && check.kernel) {
      variant.kernel_ms = check.kernel->median_ms;
      variant.speedup = check.speedup;
      if (result.program.empty() || variant.kernel_ms < result.kernel_ms) {
        result.program = gen.program;
        result.schedule = schedule;
        result.kernel_ms = variant.kernel_ms;
        result.speedup = variant.speedup;
      }
    } else {
      variant.message = check.message;
      if (first_failure.empty()) first_failure = variant.outcome + ": " + check.message;
    }
    result.variants.push_back(variant);
  }
  result.status = result.program.empty() ? AutotuneStatus::no_correct : AutotuneStatus::correct;
  if (result.program.empty())
    result.unsupported = first_failure.empty() ? "no schedule emitted a program" : "no correct variant; first: " + first_failure;
  return result;
}

}  // namespace kforge::codegen
