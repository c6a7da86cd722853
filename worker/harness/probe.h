// The sandboxed probe: runs an op's reference once on small inputs in a child
// process (kforge-probe) under CPU, memory and wall limits, to learn output
// shapes and dtypes or a clear error. Test: ctest -R harness_probe.
#pragma once

#include <string>
#include <vector>

#include "spec/op_spec.h"

namespace kforge::harness {

//! Limits and knobs for probe_op.
struct ProbeOptions {
  double cpu_seconds = 20;                           //!< CPU-time limit of the child
  double wall_seconds = 30;                          //!< wall-clock limit of the child (includes libtorch start-up)
  int64_t memory_bytes = int64_t{6} << 30;           //!< memory limit of the child (RLIMIT_DATA: heap and buffers)
  int64_t max_probe_elements = int64_t{1} << 22;     //!< inputs larger than this (in total) are scaled down
  uint64_t seed = 0;                                 //!< input seed
  std::string probe_binary;                          //!< default: kforge-probe next to this executable
};

//! Shape and dtype of one output.
struct OutputInfo {
  std::vector<int64_t> shape;
  spec::DType dtype = spec::DType::float32;
};

//! Outcome of a probe.
enum class ProbeStatus { ok, compile_error, runtime_error, timeout, out_of_memory, internal_error };

//! "ok", "compile_error", "runtime_error", "timeout", "out_of_memory", "internal_error".
std::string probe_status_name(ProbeStatus status);

//! What the probe learned.
struct ProbeResult {
  ProbeStatus status = ProbeStatus::internal_error;
  std::string message;              //!< empty when ok; else what went wrong, naming the line for compile errors
  spec::ShapeSet shapes;            //!< the input shapes it ran on
  bool scaled = false;              //!< true if `shapes` are scaled-down main shapes
  std::vector<OutputInfo> outputs;  //!< output shapes and dtypes for `shapes`
  //! Output shapes and dtypes for the op's declared (main) shapes: `outputs` when it ran on
  //! them, else from a meta-device pass; empty with declared_error set when that failed.
  std::vector<OutputInfo> declared_outputs;
  std::string declared_error;       //!< why declared_outputs is empty (an op without meta kernels)
  double wall_ms = 0;               //!< time the probe took, child start-up included
  bool ok() const { return status == ProbeStatus::ok; }
};

//! Picks the shapes to probe: the main shapes if small, else the smallest small extra
//! shape set, else the main shapes scaled down consistently (equal sizes stay equal).
spec::ShapeSet probe_shapes(const spec::OpSpec& spec, int64_t max_elements, bool& scaled);

//! Runs the reference once in a sandboxed child. Never throws; the caller survives
//! infinite loops, huge allocations and crashes in the TorchScript.
ProbeResult probe_op(const spec::OpSpec& spec, const ProbeOptions& options = {});

}  // namespace kforge::harness
