// OpenCL backend behind cl_backend.h. Every cl* status goes through
// KFORGE_CL_CHECK, which names the call, file and line. Test: ctest -R harness_cl_backend.
#include "worker/harness/cl_backend.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace kforge::harness {
namespace {

constexpr uint8_t kCanary = 0xC3;
constexpr int64_t kGuardBytes = int64_t{64} << 10;  // PROT_NONE on each side of a CPU buffer
constexpr int64_t kAlignment = 128;       // PoCL uses a host pointer in place when it is this aligned
constexpr int64_t kCanaryBytes = 4096;    // canary region after the data on non-CPU devices
int64_t guard_bytes() { return std::max<int64_t>(sysconf(_SC_PAGESIZE), kGuardBytes); }

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string device_info_string(cl_device_id device, cl_device_info param) {
  size_t size = 0;
  KFORGE_CL_CHECK(clGetDeviceInfo(device, param, 0, nullptr, &size));
  std::string value(size, '\0');
  KFORGE_CL_CHECK(clGetDeviceInfo(device, param, size, value.data(), nullptr));
  while (!value.empty() && value.back() == '\0') value.pop_back();
  return value;
}

std::string platform_info_string(cl_platform_id platform, cl_platform_info param) {
  size_t size = 0;
  KFORGE_CL_CHECK(clGetPlatformInfo(platform, param, 0, nullptr, &size));
  std::string value(size, '\0');
  KFORGE_CL_CHECK(clGetPlatformInfo(platform, param, size, value.data(), nullptr));
  while (!value.empty() && value.back() == '\0') value.pop_back();
  return value;
}

}  // namespace

const char* cl_status_name(cl_int status) {
  switch (status) {
#define KFORGE_CL_NAME(x) \
  case x: return #x;
    KFORGE_CL_NAME(CL_SUCCESS)
    KFORGE_CL_NAME(CL_DEVICE_NOT_FOUND)
    KFORGE_CL_NAME(CL_DEVICE_NOT_AVAILABLE)
    KFORGE_CL_NAME(CL_COMPILER_NOT_AVAILABLE)
    KFORGE_CL_NAME(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    KFORGE_CL_NAME(CL_OUT_OF_RESOURCES)
    KFORGE_CL_NAME(CL_OUT_OF_HOST_MEMORY)
    KFORGE_CL_NAME(CL_PROFILING_INFO_NOT_AVAILABLE)
    KFORGE_CL_NAME(CL_BUILD_PROGRAM_FAILURE)
    KFORGE_CL_NAME(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    KFORGE_CL_NAME(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    KFORGE_CL_NAME(CL_INVALID_VALUE)
    KFORGE_CL_NAME(CL_INVALID_DEVICE)
    KFORGE_CL_NAME(CL_INVALID_CONTEXT)
    KFORGE_CL_NAME(CL_INVALID_COMMAND_QUEUE)
    KFORGE_CL_NAME(CL_INVALID_HOST_PTR)
    KFORGE_CL_NAME(CL_INVALID_MEM_OBJECT)
    KFORGE_CL_NAME(CL_INVALID_BUILD_OPTIONS)
    KFORGE_CL_NAME(CL_INVALID_PROGRAM)
    KFORGE_CL_NAME(CL_INVALID_PROGRAM_EXECUTABLE)
    KFORGE_CL_NAME(CL_INVALID_KERNEL_NAME)
    KFORGE_CL_NAME(CL_INVALID_KERNEL_DEFINITION)
    KFORGE_CL_NAME(CL_INVALID_KERNEL)
    KFORGE_CL_NAME(CL_INVALID_ARG_INDEX)
    KFORGE_CL_NAME(CL_INVALID_ARG_VALUE)
    KFORGE_CL_NAME(CL_INVALID_ARG_SIZE)
    KFORGE_CL_NAME(CL_INVALID_KERNEL_ARGS)
    KFORGE_CL_NAME(CL_INVALID_WORK_DIMENSION)
    KFORGE_CL_NAME(CL_INVALID_WORK_GROUP_SIZE)
    KFORGE_CL_NAME(CL_INVALID_WORK_ITEM_SIZE)
    KFORGE_CL_NAME(CL_INVALID_GLOBAL_OFFSET)
    KFORGE_CL_NAME(CL_INVALID_EVENT)
    KFORGE_CL_NAME(CL_INVALID_OPERATION)
    KFORGE_CL_NAME(CL_INVALID_BUFFER_SIZE)
    KFORGE_CL_NAME(CL_INVALID_GLOBAL_WORK_SIZE)
    KFORGE_CL_NAME(CL_INVALID_PLATFORM)
#undef KFORGE_CL_NAME
    default: return "CL_UNKNOWN_STATUS";
  }
}

void cl_check(cl_int status, const char* call, const char* file, int line) {
  if (status == CL_SUCCESS) return;
  std::string name(call);
  name = name.substr(0, name.find('('));
  const char* base = std::strrchr(file, '/');
  throw ClError(status, std::string(base ? base + 1 : file) + ":" + std::to_string(line) + ": " + name +
                            " failed: " + cl_status_name(status) + " (" + std::to_string(status) + ")");
}

GuardedBuffer::GuardedBuffer(cl_context context, int64_t bytes, bool use_guard_pages)
    : bytes_(bytes), guarded_(use_guard_pages) {
  cl_int status = CL_SUCCESS;
  if (guarded_) {
    // [guard][front slack | data (128-aligned) | back slack][guard]: data ends within 128
    // bytes of the trailing guard, so reading or writing past it faults. Each guard is
    // 64 KiB of PROT_NONE (address space only, MAP_NORESERVE): a write a few KB past the
    // end (a row too far) faults instead of landing in a malloc arena.
    const int64_t page = sysconf(_SC_PAGESIZE);
    const int64_t guard = guard_bytes();
    int64_t rounded = (std::max<int64_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
    int64_t data_pages = (rounded + page - 1) / page * page;
    mapping_bytes_ = static_cast<size_t>(data_pages + 2 * guard);
    mapping_ = mmap(nullptr, mapping_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mapping_ == MAP_FAILED) {
      mapping_ = nullptr;
      throw ClError(CL_OUT_OF_HOST_MEMORY, std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": mmap of " +
                                               std::to_string(mapping_bytes_) + " bytes failed: " + std::strerror(errno));
    }
    auto* base = static_cast<uint8_t*>(mapping_);
    mprotect(base, static_cast<size_t>(guard), PROT_NONE);
    mprotect(base + guard + data_pages, static_cast<size_t>(guard), PROT_NONE);
    data_ = base + guard + data_pages - rounded;
    slack_ = rounded - bytes;
    std::memset(base + guard, kCanary, static_cast<size_t>(data_ - (base + guard)));
    std::memset(data_ + bytes, kCanary, static_cast<size_t>(slack_));
    mem_ = ClMem(clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, static_cast<size_t>(std::max<int64_t>(bytes, 1)),
                                data_, &status));
  } else {
    mem_ = ClMem(clCreateBuffer(context, CL_MEM_READ_WRITE, static_cast<size_t>(bytes + kCanaryBytes), nullptr, &status));
  }
  KFORGE_CL_CHECK(status);
}

GuardedBuffer::~GuardedBuffer() {
  mem_.reset();
  if (mapping_) munmap(mapping_, mapping_bytes_);
}

void GuardedBuffer::write(cl_command_queue queue, const void* src) {
  if (bytes_ > 0)
    KFORGE_CL_CHECK(clEnqueueWriteBuffer(queue, mem_.get(), CL_TRUE, 0, static_cast<size_t>(bytes_), src, 0, nullptr, nullptr));
  if (!guarded_) {
    // Off-CPU the canary after the data is device memory: arm it here too, or
    // canary_intact() reads whatever the allocation held (every GPU check failed so).
    uint8_t canary = kCanary;
    KFORGE_CL_CHECK(clEnqueueFillBuffer(queue, mem_.get(), &canary, 1, static_cast<size_t>(bytes_), kCanaryBytes, 0,
                                        nullptr, nullptr));
    KFORGE_CL_CHECK(clFinish(queue));
  }
}

void GuardedBuffer::read(cl_command_queue queue, void* dst) {
  if (bytes_ == 0) return;
  KFORGE_CL_CHECK(clEnqueueReadBuffer(queue, mem_.get(), CL_TRUE, 0, static_cast<size_t>(bytes_), dst, 0, nullptr, nullptr));
}

void GuardedBuffer::fill(cl_command_queue queue, uint8_t byte) {
  if (bytes_ > 0)
    KFORGE_CL_CHECK(clEnqueueFillBuffer(queue, mem_.get(), &byte, 1, 0, static_cast<size_t>(bytes_), 0, nullptr, nullptr));
  if (guarded_) {
    KFORGE_CL_CHECK(clFinish(queue));
    auto* front = static_cast<uint8_t*>(mapping_) + guard_bytes();
    std::memset(front, kCanary, static_cast<size_t>(data_ - front));
    std::memset(data_ + bytes_, kCanary, static_cast<size_t>(slack_));
  } else {
    uint8_t canary = kCanary;
    KFORGE_CL_CHECK(clEnqueueFillBuffer(queue, mem_.get(), &canary, 1, static_cast<size_t>(bytes_), kCanaryBytes, 0,
                                        nullptr, nullptr));
  }
  KFORGE_CL_CHECK(clFinish(queue));
}

bool GuardedBuffer::canary_intact(cl_command_queue queue) {
  KFORGE_CL_CHECK(clFinish(queue));
  if (guarded_) {
    auto* front = static_cast<uint8_t*>(mapping_) + guard_bytes();
    for (uint8_t* p = front; p < data_; ++p)
      if (*p != kCanary) return false;
    for (int64_t idx = 0; idx < slack_; ++idx)
      if (data_[bytes_ + idx] != kCanary) return false;
    return true;
  }
  std::vector<uint8_t> canary(kCanaryBytes);
  KFORGE_CL_CHECK(clEnqueueReadBuffer(queue, mem_.get(), CL_TRUE, static_cast<size_t>(bytes_), kCanaryBytes,
                                      canary.data(), 0, nullptr, nullptr));
  return std::all_of(canary.begin(), canary.end(), [](uint8_t b) { return b == kCanary; });
}

ClRuntime::ClRuntime(const std::string& name) {
  cl_uint platform_count = 0;
  KFORGE_CL_CHECK(clGetPlatformIDs(0, nullptr, &platform_count));
  std::vector<cl_platform_id> platforms(platform_count);
  KFORGE_CL_CHECK(clGetPlatformIDs(platform_count, platforms.data(), nullptr));
  std::string seen;
  for (cl_platform_id platform : platforms) {
    cl_uint device_count = 0;
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &device_count) != CL_SUCCESS) continue;
    std::vector<cl_device_id> ids(device_count);
    KFORGE_CL_CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, device_count, ids.data(), nullptr));
    std::string platform_name = platform_info_string(platform, CL_PLATFORM_NAME);
    for (cl_device_id id : ids) {
      std::string device_name = device_info_string(id, CL_DEVICE_NAME);
      seen += (seen.empty() ? "" : "; ") + device_name + " (" + platform_name + ")";
      // "cpu" and "gpu" select by device type (a job's device:cpu / device:gpu).
      if (lower(name) == "cpu" || lower(name) == "gpu") {
        cl_device_type type = 0;
        KFORGE_CL_CHECK(clGetDeviceInfo(id, CL_DEVICE_TYPE, sizeof type, &type, nullptr));
        if (!(type & (lower(name) == "cpu" ? CL_DEVICE_TYPE_CPU : CL_DEVICE_TYPE_GPU))) continue;
      } else if (!name.empty() && lower(device_name).find(lower(name)) == std::string::npos &&
                 lower(platform_name).find(lower(name)) == std::string::npos) {
        continue;
      }
      platform_ = platform;
      device_ = id;
      info_.platform = platform_name;
      info_.name = device_name;
      break;
    }
    if (device_) break;
  }
  if (!device_)
    throw std::runtime_error("no OpenCL device matches '" + name + "' (devices: " + (seen.empty() ? "none" : seen) + ")");
  info_.version = device_info_string(device_, CL_DEVICE_VERSION);
  info_.driver_version = device_info_string(device_, CL_DRIVER_VERSION);
  c_version_ = device_info_string(device_, CL_DEVICE_OPENCL_C_VERSION);
  cl_uint units = 0;
  KFORGE_CL_CHECK(clGetDeviceInfo(device_, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, nullptr));
  info_.compute_units = static_cast<int>(units);
  cl_device_type type = 0;
  KFORGE_CL_CHECK(clGetDeviceInfo(device_, CL_DEVICE_TYPE, sizeof type, &type, nullptr));
  info_.is_gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
  is_cpu_ = (type & CL_DEVICE_TYPE_CPU) != 0;
  size_t max_group = 1;
  KFORGE_CL_CHECK(clGetDeviceInfo(device_, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof max_group, &max_group, nullptr));
  max_work_group_ = static_cast<int64_t>(max_group);
  cl_int status = CL_SUCCESS;
  context_ = ClContext(clCreateContext(nullptr, 1, &device_, nullptr, nullptr, &status));
  KFORGE_CL_CHECK(status);
  cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};  // in-order
  queue_ = ClQueue(clCreateCommandQueueWithProperties(context_.get(), device_, props, &status));
  KFORGE_CL_CHECK(status);
}

ClProgram ClRuntime::build(const std::string& source, const std::string& options, std::string& log) {
  const char* text = source.c_str();
  size_t length = source.size();
  cl_int status = CL_SUCCESS;
  ClProgram program(clCreateProgramWithSource(context_.get(), 1, &text, &length, &status));
  KFORGE_CL_CHECK(status);
  cl_int built = clBuildProgram(program.get(), 1, &device_, options.c_str(), nullptr, nullptr);
  size_t log_size = 0;
  KFORGE_CL_CHECK(clGetProgramBuildInfo(program.get(), device_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &log_size));
  log.assign(log_size, '\0');
  KFORGE_CL_CHECK(clGetProgramBuildInfo(program.get(), device_, CL_PROGRAM_BUILD_LOG, log_size, log.data(), nullptr));
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  if (built == CL_BUILD_PROGRAM_FAILURE || built == CL_INVALID_BUILD_OPTIONS) return ClProgram();
  KFORGE_CL_CHECK(built);
  return program;
}

PlanKernels create_plan_kernels(cl_program program, const LaunchPlan& plan) {
  PlanKernels out;
  for (const auto& launch : plan.launches) {
    cl_int status = CL_SUCCESS;
    ClKernel kernel(clCreateKernel(program, launch.kernel.c_str(), &status));
    KFORGE_CL_CHECK(status);
    cl_uint arg_count = 0;
    KFORGE_CL_CHECK(clGetKernelInfo(kernel.get(), CL_KERNEL_NUM_ARGS, sizeof arg_count, &arg_count, nullptr));
    if (arg_count != launch.args.size())
      throw std::runtime_error("line " + std::to_string(launch.line) + ": the compiled kernel '" + launch.kernel +
                               "' takes " + std::to_string(arg_count) + " arguments, the launch gives " +
                               std::to_string(launch.args.size()));
    out.kernels.push_back(std::move(kernel));
  }
  return out;
}

void bind_plan_args(PlanKernels& kernels, const LaunchPlan& plan, const std::vector<cl_mem>& buffers) {
  for (size_t launch_idx = 0; launch_idx < plan.launches.size(); ++launch_idx) {
    cl_kernel kernel = kernels.kernels[launch_idx].get();
    const auto& args = plan.launches[launch_idx].args;
    for (cl_uint arg_idx = 0; arg_idx < args.size(); ++arg_idx) {
      const auto& arg = args[arg_idx];
      switch (arg.kind) {
        case PlanArg::Kind::buffer: {
          cl_mem mem = buffers.at(static_cast<size_t>(arg.buffer));
          KFORGE_CL_CHECK(clSetKernelArg(kernel, arg_idx, sizeof mem, &mem));
          break;
        }
        case PlanArg::Kind::i32: {
          cl_int value = static_cast<cl_int>(arg.integer);
          KFORGE_CL_CHECK(clSetKernelArg(kernel, arg_idx, sizeof value, &value));
          break;
        }
        case PlanArg::Kind::i64: {
          cl_long value = arg.integer;
          KFORGE_CL_CHECK(clSetKernelArg(kernel, arg_idx, sizeof value, &value));
          break;
        }
        case PlanArg::Kind::f32: {
          cl_float value = static_cast<cl_float>(arg.real);
          KFORGE_CL_CHECK(clSetKernelArg(kernel, arg_idx, sizeof value, &value));
          break;
        }
        case PlanArg::Kind::f64: {
          cl_double value = arg.real;
          KFORGE_CL_CHECK(clSetKernelArg(kernel, arg_idx, sizeof value, &value));
          break;
        }
      }
    }
  }
}

void enqueue_plan(cl_command_queue queue, PlanKernels& kernels, const LaunchPlan& plan, std::vector<ClEvent>* events) {
  if (events) events->clear();
  for (size_t launch_idx = 0; launch_idx < plan.launches.size(); ++launch_idx) {
    const auto& launch = plan.launches[launch_idx];
    size_t global[3], local[3];
    for (int dim = 0; dim < 3; ++dim) {
      global[dim] = static_cast<size_t>(launch.global[dim]);
      local[dim] = static_cast<size_t>(launch.local[dim]);
    }
    cl_event event = nullptr;
    KFORGE_CL_CHECK(clEnqueueNDRangeKernel(queue, kernels.kernels[launch_idx].get(), static_cast<cl_uint>(launch.dims),
                                           nullptr, global, local, 0, nullptr, events ? &event : nullptr));
    if (events) events->emplace_back(event);
  }
}

double events_span_ms(const std::vector<ClEvent>& events) {
  if (events.empty()) return 0;
  cl_ulong first = ~cl_ulong{0}, last = 0;
  for (const auto& event : events) {
    cl_ulong start = 0, end = 0;
    KFORGE_CL_CHECK(clGetEventProfilingInfo(event.get(), CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr));
    KFORGE_CL_CHECK(clGetEventProfilingInfo(event.get(), CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr));
    first = std::min(first, start);
    last = std::max(last, end);
  }
  return static_cast<double>(last - first) / 1e6;
}

}  // namespace kforge::harness
