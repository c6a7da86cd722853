// The OpenCL kernel backend (kernel_backend.h) over cl_backend.h's runtime, guarded
// buffers and plan launches; plus make_kernel_backend, the target -> backend switch.
// On GPUs it flushes the device cache before timed runs like the CUDA backend.
// Test: ctest -R 'harness_(cl_backend|kernel_backend)'.
#include <chrono>
#include <cstring>

#include "worker/harness/cl_backend.h"
#include "worker/harness/kernel_backend.h"

namespace kforge::harness {
namespace {

class ClDeviceBuffer : public DeviceBuffer {
 public:
  ClDeviceBuffer(cl_context context, cl_command_queue queue, int64_t bytes, bool cpu)
      : buffer_(context, bytes, cpu), queue_(queue) {}
  int64_t bytes() const override { return buffer_.bytes(); }
  void write(const void* src) override { buffer_.write(queue_, src); }
  void read(void* dst) override { buffer_.read(queue_, dst); }
  void fill(uint8_t byte) override { buffer_.fill(queue_, byte); }
  bool guards_intact() override { return buffer_.canary_intact(queue_); }
  // On a CPU device the data is host memory: compared where it lies, with no copy.
  bool matches(const void* expected, int64_t& first_diff) override {
    const uint8_t* data = buffer_.host_data();
    if (!data || bytes() == 0) return DeviceBuffer::matches(expected, first_diff);
    KFORGE_CL_CHECK(clFinish(queue_));
    return same_bytes(data, static_cast<const uint8_t*>(expected), static_cast<size_t>(bytes()), first_diff);
  }
  cl_mem mem() const { return buffer_.mem(); }

 private:
  GuardedBuffer buffer_;
  cl_command_queue queue_;
};

class ClBoundPlan : public BoundPlan {
 public:
  ClBoundPlan(PlanKernels kernels, LaunchPlan plan) : kernels(std::move(kernels)), plan(std::move(plan)) {}
  PlanKernels kernels;
  LaunchPlan plan;
  std::vector<ClEvent> events;
};

class OpenClBackend : public KernelBackend {
 public:
  explicit OpenClBackend(const std::string& device) : runtime_(device) {
    if (!runtime_.is_cpu()) {
      cl_ulong cache = 0;
      clGetDeviceInfo(runtime_.device_id(), CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, sizeof cache, &cache, nullptr);
      cache_bytes_ = static_cast<int64_t>(cache);
      // Twice the device cache, at least 64 MiB (drivers under-report L2 on some GPUs).
      flush_bytes_ = std::max<int64_t>(2 * cache_bytes_, int64_t{64} << 20);
      cl_int status = CL_SUCCESS;
      flush_ = ClMem(clCreateBuffer(runtime_.context(), CL_MEM_READ_WRITE, static_cast<size_t>(flush_bytes_), nullptr, &status));
      KFORGE_CL_CHECK(status);
    }
  }

  nlohmann::json describe() const override {
    const auto& d = runtime_.device();
    return {{"name", d.name},
            {"platform", d.platform},
            {"version", d.version},
            {"driver", d.driver_version},
            {"c_version", runtime_.opencl_c_version()},
            {"compute_units", d.compute_units},
            {"is_cpu", runtime_.is_cpu()},
            {"max_work_group", runtime_.max_work_group_size()},
            {"l2_bytes", cache_bytes_},
            {"pocl_affinity", std::getenv("POCL_AFFINITY") ? std::getenv("POCL_AFFINITY") : ""},
            {"target", "opencl"}};
  }
  bool is_cpu() const override { return runtime_.is_cpu(); }

  BuildOutcome build(const std::string& source, const std::string& options,
                     const std::vector<std::string>& /*kernels: found by name at bind*/) override {
    std::string log;
    program_ = runtime_.build(source, options, log);
    return {program_.get() != nullptr, log};
  }

  std::unique_ptr<DeviceBuffer> allocate(int64_t bytes) override {
    return std::make_unique<ClDeviceBuffer>(runtime_.context(), runtime_.queue(), bytes, runtime_.is_cpu());
  }

  std::unique_ptr<BoundPlan> bind(const LaunchPlan& plan, const std::vector<DeviceBuffer*>& buffers) override {
    if (!program_.get()) throw std::runtime_error("bind before a successful build");
    std::vector<cl_mem> mems;
    for (DeviceBuffer* buffer : buffers) mems.push_back(static_cast<ClDeviceBuffer*>(buffer)->mem());
    auto bound = std::make_unique<ClBoundPlan>(create_plan_kernels(program_.get(), plan), plan);
    bind_plan_args(bound->kernels, bound->plan, mems);
    return bound;
  }

  TimingSample launch(BoundPlan& plan) override {
    auto& bound = static_cast<ClBoundPlan&>(plan);
    auto begin = std::chrono::steady_clock::now();
    enqueue_plan(runtime_.queue(), bound.kernels, bound.plan, &bound.events);
    KFORGE_CL_CHECK(clFinish(runtime_.queue()));
    TimingSample sample;
    sample.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
    sample.device_ms = events_span_ms(bound.events);
    return sample;
  }

  void flush_caches() override {
    if (!flush_.get()) return;
    uint8_t zero = 0;
    KFORGE_CL_CHECK(clEnqueueFillBuffer(runtime_.queue(), flush_.get(), &zero, 1, 0, static_cast<size_t>(flush_bytes_),
                                        0, nullptr, nullptr));
    KFORGE_CL_CHECK(clFinish(runtime_.queue()));
  }

 private:
  ClRuntime runtime_;
  ClProgram program_;
  ClMem flush_;
  int64_t cache_bytes_ = 0, flush_bytes_ = 0;
};

}  // namespace

std::unique_ptr<KernelBackend> make_opencl_backend(const std::string& device) {
  return std::make_unique<OpenClBackend>(device);
}

std::unique_ptr<KernelBackend> make_kernel_backend(const std::string& target, const std::string& device) {
  if (target.empty() || target == "opencl") return make_opencl_backend(device);
#ifdef KFORGE_WITH_CUDA
  if (target == "cuda") return make_cuda_backend(device);
#endif
  if (target == "cuda") throw std::runtime_error("this build has no CUDA backend (configure with the CUDA toolkit)");
  throw std::runtime_error("kforge-sandbox runs targets opencl and cuda, not '" + target + "'");
}

}  // namespace kforge::harness
