// OpenCL discovery finds PoCL's CPU device (installed by scripts/install-deps.sh).
// Run: ctest -R harness_devices_test
#include <gtest/gtest.h>

#include "worker/harness/devices.h"

TEST(Devices, FindsAtLeastOneDeviceWithComputeUnits) {
  auto devices = kforge::harness::list_devices();
  if (devices.empty()) GTEST_SKIP() << "no OpenCL ICD on this host (install pocl-opencl-icd)";
  for (const auto& d : devices) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_GT(d.compute_units, 0) << d.name;
  }
  auto text = kforge::harness::describe_devices(devices);
  EXPECT_NE(text.find(devices[0].name), std::string::npos);
}
