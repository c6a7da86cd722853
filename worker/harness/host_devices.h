// What compute a host offers kforge, found in a child process (kforge-sandbox
// --list-devices), never in the worker itself: a process that has initialised OpenCL
// spawns children that see only PoCL, and a CUDA context must not live in the worker.
// Turned into the capability tags a worker registers and claims jobs by.
// Test: ctest -R harness_host_devices.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "worker/harness/devices.h"

namespace kforge::harness {

//! The devices and runtimes of this host.
struct HostDevices {
  std::vector<DeviceInfo> opencl;   //!< OpenCL devices (PoCL, NVIDIA's platform...)
  std::vector<std::string> cuda;    //!< CUDA devices: "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)"
  std::string cuda_note;            //!< why there is no CUDA device, when there is none
  bool triton = false;              //!< the Python runner's interpreter has torch (CUDA) + triton
  std::string triton_note;          //!< what was found, or why not
};

//! Probes in child processes: `sandbox_binary --list-devices`, and when a CUDA device is
//! there, `python -c 'import torch, triton ...'` with KFORGE_PYTHON (default python3).
HostDevices probe_host_devices(const std::string& sandbox_binary = "");

//! The JSON that `kforge-sandbox --list-devices` prints (OpenCL and CUDA listings).
nlohmann::json list_devices_json();

//! Capability tags: target:opencl (an OpenCL device), device:cpu (an OpenCL CPU device),
//! device:gpu (an OpenCL GPU or a CUDA device), target:cuda (a CUDA device),
//! target:triton (a CUDA device and the runner's torch + triton).
std::vector<std::string> capabilities_of(const HostDevices& devices);

//! One line for the workers row: "NVIDIA H100 80GB HBM3 (CUDA sm_90); pthread-... (OpenCL)".
std::string describe_host(const HostDevices& devices);

}  // namespace kforge::harness
