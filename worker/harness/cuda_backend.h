// The CUDA kernel backend: programs in kforge's kernel format with __global__ kernels,
// compiled by NVRTC to a cubin for the device's architecture and launched through the
// driver API (libcuda is loaded at run time, so this builds and compiles candidates on
// machines without a GPU). Every NVRTC and driver call is checked, with file and line.
// Test: ctest -R harness_cuda_backend (compile tests here; launches carry the gpu label).
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace kforge::harness {

//! A failed CUDA driver or NVRTC call: "file:line: cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (2): ...".
class CudaError : public std::runtime_error {
 public:
  explicit CudaError(const std::string& message) : std::runtime_error(message) {}
};

//! What NVRTC made of a program.
struct CudaCompile {
  bool ok = false;
  std::string log;                                   //!< the compiler's log (errors and warnings)
  std::string cubin;                                 //!< the device code (empty unless ok)
  std::map<std::string, std::string> lowered_names;  //!< kernel name as written -> symbol in the cubin
};

//! Compiles `source` for compute capability major.minor (e.g. 9.0 -> sm_90) with extra
//! NVRTC `options` (space separated), resolving each of `kernels` to its symbol.
//! Needs no GPU. Throws CudaError only when NVRTC itself fails (not for bad programs).
CudaCompile nvrtc_compile(const std::string& source, const std::vector<std::string>& kernels, int major, int minor,
                          const std::string& options = "");

//! NVRTC's version, "13.0".
std::string nvrtc_version();

//! One CUDA device as the driver reports it.
struct CudaDeviceInfo {
  int index = 0;
  std::string name;             //!< "NVIDIA H100 80GB HBM3"
  int major = 0, minor = 0;     //!< compute capability
  int multiprocessors = 0;
  int64_t memory_bytes = 0;
};

//! Every CUDA device; empty with `error` saying why when there is no driver or device.
//! Initialises the driver in this process: call it in a child (kforge-sandbox --list-devices).
std::vector<CudaDeviceInfo> list_cuda_devices(std::string& error);

}  // namespace kforge::harness
