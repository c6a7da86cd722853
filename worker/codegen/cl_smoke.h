// Minimal OpenCL executor for teacher-generated programs: runs a parsed kernel
// program's launches on the first OpenCL device and returns the output and a median
// time. Interim smoke runner used by codegen tests and bench until the harness's
// checker (sandbox, verification, timing) is merged. Test: ctest -R codegen_run.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "worker/harness/program.h"
#include "worker/harness/reference.h"

namespace kforge::codegen {

//! Result of running a program once or timing it.
struct SmokeRun {
  harness::HostTensor output;  //!< the output buffer after the last run
  double median_ms = 0.0;      //!< median wall time of the timed runs (launches + clFinish)
  int runs = 0;                //!< timed runs
  std::string error;           //!< empty on success; "compile_error: ...", "runtime_error: ..."
};

//! One OpenCL context, device and queue; create once, run many programs.
class SmokeRunner {
 public:
  //! Picks the first device of the first platform; nullptr and `error` if none.
  static std::unique_ptr<SmokeRunner> create(std::string& error);
  ~SmokeRunner();

  //! Device name, e.g. "pthread-haswell-AMD EPYC".
  std::string device_name() const;
  //! Compute units of the device.
  int compute_units() const;

  //! Builds and runs `program` on `inputs` (named as the op's inputs) producing an output of
  //! `out_shape` (float32). The output is NaN-filled first. `timed_runs` > 0 also times it.
  SmokeRun run(const harness::KernelProgram& program, const std::vector<std::string>& input_names,
               const std::vector<harness::HostTensor>& inputs, const std::vector<int64_t>& out_shape,
               int timed_runs, double max_seconds) const;

 private:
  SmokeRunner();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

//! First element outside |a - e| <= atol + rtol * |e| (NaN must match NaN), as
//! "index 17: expected 0.5, got nan"; empty when all match. Shapes must agree.
std::string compare_outputs(const harness::HostTensor& expected, const harness::HostTensor& actual, double atol,
                            double rtol);

}  // namespace kforge::codegen
