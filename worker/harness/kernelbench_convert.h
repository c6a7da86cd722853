// A KernelBench problem file (class Model, get_inputs, get_init_inputs) converted to a kforge
// op by tools/import_kernelbench.py in a sandboxed child (the python kind's jail, CPU / memory
// / wall limits): the problem is untrusted Python. Used by POST /v1/ops {"kernelbench": ...}.
// Test: ctest -R api_resources (ApiResources.OpsFromKernelBenchProblems).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace kforge::harness {

//! Limits and paths for convert_kernelbench.
struct KernelBenchConvertOptions {
  double cpu_seconds = 60;                  //!< CPU-time limit of the child (torch import included)
  double wall_seconds = 90;                 //!< wall-clock limit of the child
  int64_t memory_bytes = int64_t{4} << 30;  //!< private writable memory of the child
  //! A python with torch: default $KFORGE_IMPORT_PYTHON, else /usr/bin/python3.
  std::string python;
  //! Default: tools/import_kernelbench.py next to this executable (build/bin/tools/).
  std::string script;
};

//! The conversion: `op` (the op JSON) when ok, else `message` says why.
struct KernelBenchConversion {
  bool ok = false;
  bool internal_error = false;  //!< the converter could not run (not the problem's fault)
  nlohmann::json op;
  std::string message;
};

//! Converts the text of a problem file. Never throws.
KernelBenchConversion convert_kernelbench(const std::string& problem, const std::string& name,
                                          const KernelBenchConvertOptions& options = {});

}  // namespace kforge::harness
