// OpenCL platform and device discovery: what a worker reports at registration and
// what the backend selects by name. Test: ctest -R harness_devices.
#pragma once

#include <string>
#include <vector>

namespace kforge::harness {

//! One OpenCL device as found on this host.
struct DeviceInfo {
  std::string platform;        //!< e.g. "Portable Computing Language"
  std::string name;            //!< e.g. "pthread-AMD EPYC ..." or "NVIDIA H100 80GB HBM3"
  std::string version;         //!< OpenCL version string of the device
  std::string driver_version;  //!< driver version string
  int compute_units = 0;
  bool is_gpu = false;
};

//! Every device of every platform; empty if no ICD is installed (never throws).
std::vector<DeviceInfo> list_devices();

//! "name (platform, N CUs)" for each device, joined with "; " ("no OpenCL devices" if none).
std::string describe_devices(const std::vector<DeviceInfo>& devices);

}  // namespace kforge::harness
