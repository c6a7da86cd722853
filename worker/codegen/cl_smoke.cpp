// Minimal OpenCL executor (see cl_smoke.h): every cl* call checked with file:line,
// RAII for every handle. Test: ctest -R codegen_run.
#define CL_TARGET_OPENCL_VERSION 300
#include "worker/codegen/cl_smoke.h"

#include <CL/cl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <stdexcept>

namespace kforge::codegen {
namespace {

struct ClError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void cl_check(cl_int status, const char* what, const char* file, int line) {
  if (status != CL_SUCCESS)
    throw ClError(std::string(what) + " failed with " + std::to_string(status) + " at " + file + ":" +
                  std::to_string(line));
}
#define CL_CHECK(call) cl_check((call), #call, __FILE__, __LINE__)

template <typename T, cl_int (*Release)(T)>
struct ClHandle {
  T handle = nullptr;
  ClHandle() = default;
  explicit ClHandle(T h) : handle(h) {}
  ClHandle(ClHandle&& o) noexcept : handle(o.handle) { o.handle = nullptr; }
  ClHandle& operator=(ClHandle&& o) noexcept {
    std::swap(handle, o.handle);
    return *this;
  }
  ClHandle(const ClHandle&) = delete;
  ~ClHandle() {
    if (handle) Release(handle);
  }
  T get() const { return handle; }
};
using Context = ClHandle<cl_context, clReleaseContext>;
using Queue = ClHandle<cl_command_queue, clReleaseCommandQueue>;
using Program = ClHandle<cl_program, clReleaseProgram>;
using KernelH = ClHandle<cl_kernel, clReleaseKernel>;
using Mem = ClHandle<cl_mem, clReleaseMemObject>;

}  // namespace

struct SmokeRunner::Impl {
  cl_device_id device = nullptr;
  Context context;
  Queue queue;
  std::string name;
  int units = 0;
  std::map<std::string, Program> built;  // source -> program: variants run on several shapes build once
};

SmokeRunner::SmokeRunner() : impl_(std::make_unique<Impl>()) {}
SmokeRunner::~SmokeRunner() = default;

std::unique_ptr<SmokeRunner> SmokeRunner::create(std::string& error) {
  try {
    cl_uint platforms = 0;
    if (clGetPlatformIDs(0, nullptr, &platforms) != CL_SUCCESS || platforms == 0) {
      error = "no OpenCL platform";
      return nullptr;
    }
    std::vector<cl_platform_id> ids(platforms);
    CL_CHECK(clGetPlatformIDs(platforms, ids.data(), nullptr));
    std::unique_ptr<SmokeRunner> runner(new SmokeRunner());
    auto& impl = *runner->impl_;
    CL_CHECK(clGetDeviceIDs(ids[0], CL_DEVICE_TYPE_ALL, 1, &impl.device, nullptr));
    char name[256] = {0};
    CL_CHECK(clGetDeviceInfo(impl.device, CL_DEVICE_NAME, sizeof name - 1, name, nullptr));
    impl.name = name;
    cl_uint units = 0;
    CL_CHECK(clGetDeviceInfo(impl.device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, nullptr));
    impl.units = static_cast<int>(units);
    cl_int status = CL_SUCCESS;
    impl.context = Context(clCreateContext(nullptr, 1, &impl.device, nullptr, nullptr, &status));
    CL_CHECK(status);
    impl.queue = Queue(clCreateCommandQueueWithProperties(impl.context.get(), impl.device, nullptr, &status));
    CL_CHECK(status);
    return runner;
  } catch (const std::exception& e) {
    error = e.what();
    return nullptr;
  }
}

std::string SmokeRunner::device_name() const { return impl_->name; }
int SmokeRunner::compute_units() const { return impl_->units; }

SmokeRun SmokeRunner::run(const harness::KernelProgram& program, const std::vector<std::string>& input_names,
                          const std::vector<harness::HostTensor>& inputs, const std::vector<int64_t>& out_shape,
                          int timed_runs, double max_seconds) const {
  SmokeRun result;
  auto& impl = *impl_;
  try {
    cl_int status = CL_SUCCESS;
    std::map<std::string, std::vector<int64_t>> shapes;
    std::map<std::string, Mem> buffers;
    for (size_t input_idx = 0; input_idx < inputs.size(); ++input_idx) {
      const auto& t = inputs[input_idx];
      shapes[input_names[input_idx]] = t.shape;
      Mem mem(clCreateBuffer(impl.context.get(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                             std::max<size_t>(t.data.size(), 4), const_cast<uint8_t*>(t.data.data()), &status));
      CL_CHECK(status);
      buffers[input_names[input_idx]] = std::move(mem);
    }
    shapes["out"] = out_shape;
    int64_t out_numel = harness::shape_numel(out_shape);
    std::vector<float> host_out(static_cast<size_t>(out_numel), std::numeric_limits<float>::quiet_NaN());
    buffers["out"] = Mem(clCreateBuffer(impl.context.get(), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                        host_out.size() * 4, host_out.data(), &status));
    CL_CHECK(status);
    std::string error;
    for (const auto& scratch : program.scratch) {
      auto count = scratch.count->eval(shapes, error);
      if (!count) throw ClError("scratch " + scratch.name + ": " + error);
      buffers[scratch.name] = Mem(clCreateBuffer(impl.context.get(), CL_MEM_READ_WRITE,
                                                 std::max<int64_t>(*count, 1) * scratch.element_size, nullptr, &status));
      CL_CHECK(status);
    }
    auto cached = impl.built.find(program.source);
    if (cached == impl.built.end()) {
      const char* src = program.source.c_str();
      Program fresh(clCreateProgramWithSource(impl.context.get(), 1, &src, nullptr, &status));
      CL_CHECK(status);
      if (clBuildProgram(fresh.get(), 1, &impl.device, "-cl-std=CL3.0", nullptr, nullptr) != CL_SUCCESS) {
        size_t size = 0;
        clGetProgramBuildInfo(fresh.get(), impl.device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
        std::string log(size, '\0');
        clGetProgramBuildInfo(fresh.get(), impl.device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
        result.error = "compile_error: " + log.substr(0, 2000);
        return result;
      }
      if (impl.built.size() > 64) impl.built.clear();
      cached = impl.built.emplace(program.source, std::move(fresh)).first;
    }
    const Program& prog = cached->second;
    struct Prepared {
      KernelH kernel;
      std::vector<size_t> global, local;
    };
    std::vector<Prepared> launches;
    for (const auto& launch : program.launches) {
      Prepared p;
      p.kernel = KernelH(clCreateKernel(prog.get(), launch.kernel.c_str(), &status));
      CL_CHECK(status);
      for (size_t arg_idx = 0; arg_idx < launch.args.size(); ++arg_idx) {
        const auto& arg = launch.args[arg_idx];
        if (arg.kind == harness::LaunchArg::Kind::buffer) {
          auto it = buffers.find(arg.name);
          if (it == buffers.end()) throw ClError("launch arg names unknown buffer " + arg.name);
          cl_mem mem = it->second.get();
          CL_CHECK(clSetKernelArg(p.kernel.get(), arg_idx, sizeof(cl_mem), &mem));
        } else if (arg.kind == harness::LaunchArg::Kind::integer) {
          auto v = arg.expr->eval(shapes, error);
          if (!v) throw ClError("launch arg " + arg.text + ": " + error);
          cl_int value = static_cast<cl_int>(*v);
          CL_CHECK(clSetKernelArg(p.kernel.get(), arg_idx, sizeof value, &value));
        } else {
          cl_float value = static_cast<cl_float>(arg.real);
          CL_CHECK(clSetKernelArg(p.kernel.get(), arg_idx, sizeof value, &value));
        }
      }
      for (size_t dim = 0; dim < launch.grid.size(); ++dim) {
        auto g = launch.grid[dim]->eval(shapes, error);
        auto b = launch.block[dim]->eval(shapes, error);
        if (!g || !b) throw ClError("launch " + launch.kernel + " grid/block: " + error);
        p.global.push_back(static_cast<size_t>(*g * *b));
        p.local.push_back(static_cast<size_t>(*b));
      }
      launches.push_back(std::move(p));
    }
    auto run_once = [&] {
      for (auto& p : launches) {
        bool empty = std::any_of(p.global.begin(), p.global.end(), [](size_t g) { return g == 0; });
        if (empty) continue;
        CL_CHECK(clEnqueueNDRangeKernel(impl.queue.get(), p.kernel.get(), static_cast<cl_uint>(p.global.size()),
                                        nullptr, p.global.data(), p.local.data(), 0, nullptr, nullptr));
      }
      CL_CHECK(clFinish(impl.queue.get()));
    };
    run_once();
    CL_CHECK(clEnqueueReadBuffer(impl.queue.get(), buffers["out"].get(), CL_TRUE, 0, host_out.size() * 4,
                                 host_out.data(), 0, nullptr, nullptr));
    result.output.dtype = harness::DType::float32;
    result.output.shape = out_shape;
    result.output.data.resize(host_out.size() * 4);
    std::memcpy(result.output.data.data(), host_out.data(), host_out.size() * 4);
    std::vector<double> times;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(max_seconds);
    for (int run_idx = 0; run_idx < timed_runs; ++run_idx) {
      auto start = std::chrono::steady_clock::now();
      run_once();
      auto stop = std::chrono::steady_clock::now();
      times.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
      if (stop > deadline && run_idx >= 2) break;
    }
    if (!times.empty()) {
      std::sort(times.begin(), times.end());
      result.median_ms = times[times.size() / 2];
      result.runs = static_cast<int>(times.size());
    }
  } catch (const std::exception& e) {
    result.error = std::string("runtime_error: ") + e.what();
  }
  return result;
}

std::string compare_outputs(const harness::HostTensor& expected, const harness::HostTensor& actual, double atol,
                            double rtol) {
  if (expected.shape != actual.shape)
    return "shape " + harness::shape_to_string(actual.shape) + ", expected " + harness::shape_to_string(expected.shape);
  for (int64_t index = 0; index < expected.numel(); ++index) {
    double e = expected.value_at(index), a = actual.value_at(index);
    bool ok = std::isnan(e) ? std::isnan(a) : (std::isfinite(a) || a == e) && std::fabs(a - e) <= atol + rtol * std::fabs(e);
    if (!ok)
      return "index " + std::to_string(index) + ": expected " + std::to_string(e) + ", got " + std::to_string(a);
  }
  return "";
}

}  // namespace kforge::codegen
