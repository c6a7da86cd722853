// One interface for the device side of a kernel check (compile, allocate guarded
// buffers, bind a launch plan, launch + synchronise with device timing, flush caches),
// with an OpenCL implementation (PoCL on the CPU, NVIDIA's platform on GPUs) and a CUDA
// one (NVRTC + driver API). kforge-sandbox drives whichever the target names.
// Test: ctest -R 'harness_(kernel_backend|cuda_backend|cl_backend)'.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "worker/harness/rules.h"
#include "worker/harness/timing.h"

namespace kforge::harness {

//! A device buffer with guard regions on both sides (canaries on GPUs, PROT_NONE pages
//! on CPU devices), so writes outside the data are caught.
class DeviceBuffer {
 public:
  virtual ~DeviceBuffer() = default;
  //! Data size in bytes.
  virtual int64_t bytes() const = 0;
  //! Copies bytes() bytes from host memory in and re-arms the guards (blocking).
  virtual void write(const void* src) = 0;
  //! Copies the data out to host memory (blocking).
  virtual void read(void* dst) = 0;
  //! Fills the data with `byte` (poison) and re-arms the guards (blocking).
  virtual void fill(uint8_t byte) = 0;
  //! True if both guard regions are intact (no write outside the data).
  virtual bool guards_intact() = 0;
  //! A keyed 64-bit fingerprint of the data computed on the device (no copy to the host),
  //! or nullopt where the backend has none (then matches() is the check). With a key the
  //! candidate never sees, a changed input changes the print: one changed 8-byte word
  //! always does; several cancel out with probability 2^-64.
  virtual std::optional<uint64_t> fingerprint(uint64_t /*key*/, uint64_t /*salt*/) { return std::nullopt; }
  //! True if the data equals the bytes()-long host block `expected` (the inputs-unchanged
  //! check); else `first_diff` is the first byte that differs. Reads back through read();
  //! backends with faster paths (CUDA: a pinned staging block) override it.
  virtual bool matches(const void* expected, int64_t& first_diff) {
    std::vector<uint8_t> now(static_cast<size_t>(bytes()));
    read(now.data());
    return same_bytes(now.data(), static_cast<const uint8_t*>(expected), now.size(), first_diff);
  }

 protected:
  static bool same_bytes(const uint8_t* now, const uint8_t* expected, size_t count, int64_t& first_diff) {
    if (std::memcmp(now, expected, count) == 0) return true;
    size_t first = 0;
    while (now[first] == expected[first]) ++first;
    first_diff = static_cast<int64_t>(first);
    return false;
  }
};

//! A plan's kernels with their arguments bound to one set of buffers, ready to launch.
class BoundPlan {
 public:
  virtual ~BoundPlan() = default;
};

//! What compiling a program gave: success, or the compiler's log.
struct BuildOutcome {
  bool ok = false;
  std::string log;
};

//! The device side of a check. Methods throw std::runtime_error (BackendError) on failure.
class KernelBackend {
 public:
  virtual ~KernelBackend() = default;
  //! The "device" object of the sandbox's ready line (name, platform, version, driver,
  //! compute_units, is_cpu, max_work_group, l2_bytes, target...).
  virtual nlohmann::json describe() const = 0;
  //! True when buffers live in this process's memory (CPU devices).
  virtual bool is_cpu() const = 0;
  //! Compiles the program text (OpenCL C or CUDA C++) with compiler `options`, replacing any
  //! earlier program. `kernels` are the names the launch lines use (CUDA resolves their symbols).
  virtual BuildOutcome build(const std::string& source, const std::string& options,
                             const std::vector<std::string>& kernels) = 0;
  //! A guarded buffer of `bytes` bytes (contents undefined until written or filled).
  virtual std::unique_ptr<DeviceBuffer> allocate(int64_t bytes) = 0;
  //! Binds the built program's kernels for `plan` to `buffers` (index-aligned with plan.buffers).
  virtual std::unique_ptr<BoundPlan> bind(const LaunchPlan& plan, const std::vector<DeviceBuffer*>& buffers) = 0;
  //! Launches every kernel of the plan in order and waits for the whole device.
  //! Returns the host wall time around launch + sync and the device time of the launches.
  virtual TimingSample launch(BoundPlan& bound) = 0;
  //! Evicts device caches before a timed run (GPU: writes twice the L2 size); no-op on CPUs.
  virtual void flush_caches() = 0;
  //! Timed runs of `plans` in order, each after a cache flush. A GPU backend queues them
  //! all (flush, events, launches) and synchronises once, as triton's do_bench does; the
  //! default flushes, launches and waits for each in turn.
  virtual std::vector<TimingSample> launch_batch(const std::vector<BoundPlan*>& plans) {
    std::vector<TimingSample> samples;
    for (BoundPlan* plan : plans) {
      flush_caches();
      samples.push_back(launch(*plan));
    }
    return samples;
  }
  //! Makes copies between the device and host block [ptr, ptr + bytes) fast (CUDA: page-locks
  //! it in place, read-only for the inputs), for as long as the backend lives. Best effort:
  //! false (and copies stay correct, only slower) where the backend or host cannot.
  virtual bool register_host(void* /*ptr*/, size_t /*bytes*/, bool /*read_only*/) { return false; }
};

//! OpenCL on the first device whose name or platform contains `device` (case-insensitive).
std::unique_ptr<KernelBackend> make_opencl_backend(const std::string& device);
//! CUDA on device `device` ("" or "0", "1", ...; a name substring also works). Throws when
//! the driver or a device is missing, saying which.
std::unique_ptr<KernelBackend> make_cuda_backend(const std::string& device);
//! The backend for a target name ("opencl", "cuda"); throws for others.
std::unique_ptr<KernelBackend> make_kernel_backend(const std::string& target, const std::string& device);

}  // namespace kforge::harness
