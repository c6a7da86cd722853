// Device discovery in a child (kforge-sandbox --list-devices) and the capability tags a
// worker registers: here PoCL gives target:opencl + device:cpu, and no CUDA device means
// no cuda or triton tag, each absence with its reason. Test: ctest -R harness_host_devices.
#include <gtest/gtest.h>

#include <algorithm>

#include "worker/harness/host_devices.h"
#include "worker/harness/sandbox_process.h"

namespace kforge::harness {
namespace {

bool has(const std::vector<std::string>& tags, const std::string& tag) {
  return std::find(tags.begin(), tags.end(), tag) != tags.end();
}

TEST(HostDevices, ChildListingGivesTheWorkersCapabilities) {
  HostDevices host = probe_host_devices(std::string(KFORGE_BIN_DIR) + "/kforge-sandbox");
  if (host.opencl.empty() && host.cuda.empty()) GTEST_SKIP() << "no OpenCL or CUDA device here: " << host.cuda_note;
  auto tags = capabilities_of(host);
  EXPECT_EQ(has(tags, "target:opencl"), !host.opencl.empty());
  EXPECT_EQ(has(tags, "target:cuda"), !host.cuda.empty());
  if (host.cuda.empty()) {
    EXPECT_FALSE(has(tags, "target:triton")) << "no triton without a CUDA device";
    EXPECT_FALSE(host.cuda_note.empty()) << "the reason there is no CUDA device is kept";
  }
  bool cpu_device = std::any_of(host.opencl.begin(), host.opencl.end(), [](const DeviceInfo& d) { return !d.is_gpu; });
  EXPECT_EQ(has(tags, "device:cpu"), cpu_device);
  EXPECT_NE(describe_host(host), "no devices");
}

TEST(HostDevices, TagsFollowTheDevicesFound) {
  HostDevices gpu_host;
  gpu_host.cuda = {"NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)"};
  gpu_host.triton = true;
  DeviceInfo nvidia_cl;
  nvidia_cl.name = "NVIDIA H100 80GB HBM3";
  nvidia_cl.is_gpu = true;
  gpu_host.opencl = {nvidia_cl};
  EXPECT_EQ(capabilities_of(gpu_host),
            (std::vector<std::string>{"target:opencl", "target:cuda", "target:triton", "device:gpu"}));
  HostDevices cpu_host;
  DeviceInfo pocl;
  pocl.name = "pthread-skylake";
  cpu_host.opencl = {pocl};
  EXPECT_EQ(capabilities_of(cpu_host), (std::vector<std::string>{"target:opencl", "device:cpu"}));
}

}  // namespace
}  // namespace kforge::harness
