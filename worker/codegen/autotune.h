// Autotune mode of the teacher compiler: emit a spread of schedules from the op's
// space, check each through the harness Checker (sandbox, seeded trials, extra
// shapes, timing vs libtorch), keep the fastest correct one. Test: ctest -R codegen_autotune.
#pragma once

#include <string>
#include <vector>

#include "worker/codegen/codegen.h"
#include "worker/harness/checker.h"

namespace kforge::codegen {

//! One schedule tried by autotune and what the harness said.
struct VariantResult {
  Schedule schedule;
  std::string outcome;     //!< harness outcome name ("correct", "wrong_output", ...)
  std::string message;     //!< harness message when not correct
  double kernel_ms = 0.0;  //!< median time (correct only)
  double speedup = 0.0;    //!< vs libtorch eager, same protocol (correct only)
  harness::CheckResult check;  //!< the full harness record (timings of both sides, environment)
};

//! How autotune ended.
enum class AutotuneStatus {
  correct,         //!< at least one variant passed the Checker
  unsupported,     //!< the op does not lower (analysis says why)
  reference_error, //!< the Checker could not be made (the op's reference failed)
  no_correct,      //!< variants were checked, none was correct
};

//! The autotune answer: the fastest correct program, or why there is none.
struct AutotuneResult {
  AutotuneStatus status = AutotuneStatus::unsupported;  //!< how it ended
  std::string unsupported;  //!< non-empty when the op does not lower or no variant was correct
  std::string program;      //!< the winning program
  Schedule schedule;        //!< its schedule
  double kernel_ms = 0.0;   //!< its median time
  double speedup = 0.0;     //!< its speedup over eager
  std::vector<VariantResult> variants;  //!< every schedule tried, in order
  //! True when a correct program was found.
  bool ok() const { return unsupported.empty(); }
};

//! Tries up to `max_schedules` schedules spread over schedule_space (all when 0; the first
//! `max_schedules` when `spread` is false), emitted in `options.target` (opencl, cuda or triton).
AutotuneResult autotune(const spec::OpSpec& spec, const harness::CheckOptions& options, size_t max_schedules,
                        bool spread = true);

}  // namespace kforge::codegen
