// OpenCL backend: device selection by name, context and in-order profiling
// queue, program build with the log captured, guarded buffers, launches with
// event timings. Every cl* call is checked (file:line); handles are RAII.
// Used inside kforge-sandbox and by bench/harness. Test: ctest -R harness_cl_backend.
#pragma once

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "worker/harness/devices.h"
#include "worker/harness/rules.h"

namespace kforge::harness {

//! A failed OpenCL call: "file:line: clFoo failed: CL_INVALID_VALUE (-30)".
class ClError : public std::runtime_error {
 public:
  ClError(cl_int code, const std::string& message) : std::runtime_error(message), code_(code) {}
  //! The OpenCL status code.
  cl_int code() const { return code_; }

 private:
  cl_int code_;
};

//! "CL_INVALID_WORK_GROUP_SIZE" for -54.
const char* cl_status_name(cl_int status);
//! Throws ClError naming the call and the source location unless status is CL_SUCCESS.
void cl_check(cl_int status, const char* call, const char* file, int line);
#define KFORGE_CL_CHECK(call) ::kforge::harness::cl_check((call), #call, __FILE__, __LINE__)

//! Unique owner of a cl_* handle, released with its clRelease* function.
template <typename T, cl_int (*Release)(T)>
class ClHandle {
 public:
  ClHandle() = default;
  explicit ClHandle(T handle) : handle_(handle) {}
  ClHandle(ClHandle&& other) noexcept : handle_(other.handle_) { other.handle_ = nullptr; }
  ClHandle& operator=(ClHandle&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = other.handle_;
      other.handle_ = nullptr;
    }
    return *this;
  }
  ClHandle(const ClHandle&) = delete;
  ClHandle& operator=(const ClHandle&) = delete;
  ~ClHandle() { reset(); }
  //! The raw handle (still owned).
  T get() const { return handle_; }
  //! Releases the handle now.
  void reset() {
    if (handle_) Release(handle_);
    handle_ = nullptr;
  }

 private:
  T handle_ = nullptr;
};

using ClContext = ClHandle<cl_context, clReleaseContext>;
using ClQueue = ClHandle<cl_command_queue, clReleaseCommandQueue>;
using ClProgram = ClHandle<cl_program, clReleaseProgram>;
using ClKernel = ClHandle<cl_kernel, clReleaseKernel>;
using ClMem = ClHandle<cl_mem, clReleaseMemObject>;
using ClEvent = ClHandle<cl_event, clReleaseEvent>;

//! A device buffer. On CPU devices it lives in host memory between PROT_NONE guard
//! pages (an access past the end faults) with a canary in the alignment slack; on
//! other devices a canary region follows the data.
class GuardedBuffer {
 public:
  GuardedBuffer(cl_context context, int64_t bytes, bool use_guard_pages);
  ~GuardedBuffer();
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;
  //! The cl_mem to pass as a kernel argument.
  cl_mem mem() const { return mem_.get(); }
  //! Data size in bytes.
  int64_t bytes() const { return bytes_; }
  //! Copies `bytes()` bytes from host memory into the buffer (blocking).
  void write(cl_command_queue queue, const void* src);
  //! Copies the buffer into host memory (blocking).
  void read(cl_command_queue queue, void* dst);
  //! Fills the data with `byte` (poison) and re-arms the canary.
  void fill(cl_command_queue queue, uint8_t byte);
  //! True if the canary after the data is intact (no write past the end).
  bool canary_intact(cl_command_queue queue);
  //! The data in host memory (guarded mode: the buffer is host memory), else nullptr.
  const uint8_t* host_data() const { return guarded_ ? data_ : nullptr; }

 private:
  int64_t bytes_ = 0;
  bool guarded_ = false;
  void* mapping_ = nullptr;   // whole mmap (guarded mode)
  size_t mapping_bytes_ = 0;
  uint8_t* data_ = nullptr;   // start of data inside the mapping (guarded mode)
  int64_t slack_ = 0;         // canary bytes between data end and the guard page
  ClMem mem_;
};

//! An OpenCL device with a context and an in-order, profiling-enabled queue.
class ClRuntime {
 public:
  //! Selects the first device whose name or platform contains `name` (case-insensitive;
  //! empty: the first device; "cpu" / "gpu": the first device of that type). Throws ClError/runtime_error naming what exists if none matches.
  explicit ClRuntime(const std::string& name);
  //! The selected device.
  const DeviceInfo& device() const { return info_; }
  //! OpenCL C version string of the device ("OpenCL C 1.2 pocl").
  const std::string& opencl_c_version() const { return c_version_; }
  //! Largest work-group the device allows.
  int64_t max_work_group_size() const { return max_work_group_; }
  //! True for CPU devices (guard pages work: buffers live in our address space).
  bool is_cpu() const { return is_cpu_; }
  cl_device_id device_id() const { return device_; }
  cl_context context() const { return context_.get(); }
  cl_command_queue queue() const { return queue_.get(); }

  //! Builds `source`; returns the program, or nullptr with the build log in `log`.
  ClProgram build(const std::string& source, const std::string& options, std::string& log);

 private:
  cl_platform_id platform_ = nullptr;
  cl_device_id device_ = nullptr;
  DeviceInfo info_;
  std::string c_version_;
  int64_t max_work_group_ = 1;
  bool is_cpu_ = false;
  ClContext context_;
  ClQueue queue_;
};

//! Kernels of a built program, by name, in launch-plan order.
struct PlanKernels {
  std::vector<ClKernel> kernels;  //!< one per launch
};

//! Creates one cl_kernel per launch (so args set per launch persist). Throws ClError.
PlanKernels create_plan_kernels(cl_program program, const LaunchPlan& plan);
//! Sets every launch's args for `buffers` (index-aligned with plan.buffers). Throws ClError.
void bind_plan_args(PlanKernels& kernels, const LaunchPlan& plan, const std::vector<cl_mem>& buffers);
//! Enqueues every launch in order; with `events` non-null, collects one event per launch. Throws ClError.
void enqueue_plan(cl_command_queue queue, PlanKernels& kernels, const LaunchPlan& plan, std::vector<ClEvent>* events);
//! Sum of device time over the events (first start to last end), in milliseconds.
double events_span_ms(const std::vector<ClEvent>& events);

}  // namespace kforge::harness
