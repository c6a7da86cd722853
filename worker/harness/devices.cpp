// OpenCL discovery through the ICD loader; every call's status is checked and a
// failing platform is skipped rather than fatal.
// Test: ctest -R harness_devices_test.
#include "worker/harness/devices.h"

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

namespace kforge::harness {
namespace {

std::string device_string(cl_device_id device, cl_device_info param) {
  size_t size = 0;
  if (clGetDeviceInfo(device, param, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string value(size, '\0');
  if (clGetDeviceInfo(device, param, size, value.data(), nullptr) != CL_SUCCESS) return "";
  while (!value.empty() && value.back() == '\0') value.pop_back();
  return value;
}

std::string platform_string(cl_platform_id platform, cl_platform_info param) {
  size_t size = 0;
  if (clGetPlatformInfo(platform, param, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string value(size, '\0');
  if (clGetPlatformInfo(platform, param, size, value.data(), nullptr) != CL_SUCCESS) return "";
  while (!value.empty() && value.back() == '\0') value.pop_back();
  return value;
}

}  // namespace

std::vector<DeviceInfo> list_devices() {
  std::vector<DeviceInfo> devices;
  cl_uint platform_count = 0;
  if (clGetPlatformIDs(0, nullptr, &platform_count) != CL_SUCCESS || platform_count == 0) return devices;
  std::vector<cl_platform_id> platforms(platform_count);
  if (clGetPlatformIDs(platform_count, platforms.data(), nullptr) != CL_SUCCESS) return devices;
  for (cl_platform_id platform : platforms) {
    cl_uint device_count = 0;
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &device_count) != CL_SUCCESS) continue;
    std::vector<cl_device_id> ids(device_count);
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, device_count, ids.data(), nullptr) != CL_SUCCESS) continue;
    for (cl_device_id id : ids) {
      DeviceInfo info;
      info.platform = platform_string(platform, CL_PLATFORM_NAME);
      info.name = device_string(id, CL_DEVICE_NAME);
      info.version = device_string(id, CL_DEVICE_VERSION);
      info.driver_version = device_string(id, CL_DRIVER_VERSION);
      cl_uint units = 0;
      clGetDeviceInfo(id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, nullptr);
      info.compute_units = static_cast<int>(units);
      cl_device_type type = 0;
      clGetDeviceInfo(id, CL_DEVICE_TYPE, sizeof type, &type, nullptr);
      info.is_gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
      devices.push_back(info);
    }
  }
  return devices;
}

std::string describe_devices(const std::vector<DeviceInfo>& devices) {
  if (devices.empty()) return "no OpenCL devices";
  std::string out;
  for (const auto& d : devices) {
    if (!out.empty()) out += "; ";
    out += d.name + " (" + d.platform + ", " + std::to_string(d.compute_units) + " CUs)";
  }
  return out;
}

}  // namespace kforge::harness
