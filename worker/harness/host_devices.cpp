// Host device discovery in child processes (host_devices.h), so a crashing driver
// cannot take the worker down. Test: ctest -R harness_host_devices.
#include "worker/harness/host_devices.h"

#include <cstdlib>

#include "common/subprocess.h"
#include "worker/harness/sandbox_process.h"
#ifdef KFORGE_WITH_CUDA
#include "worker/harness/cuda_backend.h"
#endif

namespace kforge::harness {

nlohmann::json list_devices_json() {
  nlohmann::json out{{"opencl", nlohmann::json::array()}, {"cuda", nlohmann::json::array()}};
  for (const auto& d : list_devices())
    out["opencl"].push_back({{"name", d.name}, {"platform", d.platform}, {"version", d.version},
                             {"driver", d.driver_version}, {"compute_units", d.compute_units}, {"is_gpu", d.is_gpu}});
#ifdef KFORGE_WITH_CUDA
  std::string error;
  for (const auto& d : list_cuda_devices(error))
    out["cuda"].push_back(d.name + " (sm_" + std::to_string(d.major) + std::to_string(d.minor) + ", " +
                          std::to_string(d.multiprocessors) + " SMs)");
  if (!error.empty()) out["cuda_note"] = error;
#else
  out["cuda_note"] = "this build has no CUDA backend";
#endif
  return out;
}

HostDevices probe_host_devices(const std::string& sandbox_binary) {
  HostDevices host;
  std::string binary = sandbox_binary.empty() ? helper_binary_path("kforge-sandbox") : sandbox_binary;
  auto [status, output] = run_command({binary, "--list-devices"});
  nlohmann::json listing = nlohmann::json::parse(output.substr(0, output.find('\n')), nullptr, false);
  if (status != 0 || !listing.is_object()) {
    host.cuda_note = "device listing failed (" + binary + " --list-devices): " + output.substr(0, 300);
    return host;
  }
  for (const auto& d : listing["opencl"]) {
    DeviceInfo info;
    info.name = d.value("name", "");
    info.platform = d.value("platform", "");
    info.version = d.value("version", "");
    info.driver_version = d.value("driver", "");
    info.compute_units = d.value("compute_units", 0);
    info.is_gpu = d.value("is_gpu", false);
    host.opencl.push_back(info);
  }
  for (const auto& d : listing["cuda"]) host.cuda.push_back(d.get<std::string>());
  host.cuda_note = listing.value("cuda_note", "");
  if (host.cuda.empty()) {
    host.triton_note = "no CUDA device";
    return host;
  }
  const char* python = std::getenv("KFORGE_PYTHON");
  auto [py_status, py_output] = run_command(
      {python && *python ? python : "python3", "-c",
       "import torch, triton; assert torch.cuda.is_available(), 'torch sees no CUDA device'; "
       "print('torch', torch.__version__, 'triton', triton.__version__)"});
  host.triton = py_status == 0;
  while (!py_output.empty() && py_output.back() == '\n') py_output.pop_back();
  host.triton_note = py_output.size() > 300 ? py_output.substr(py_output.size() - 300) : py_output;
  return host;
}

std::vector<std::string> capabilities_of(const HostDevices& devices) {
  std::vector<std::string> tags;
  bool cpu = false, gpu = !devices.cuda.empty();
  for (const auto& d : devices.opencl) (d.is_gpu ? gpu : cpu) = true;
  if (!devices.opencl.empty()) tags.push_back("target:opencl");
  if (!devices.cuda.empty()) tags.push_back("target:cuda");
  if (devices.triton) tags.push_back("target:triton");
  if (cpu) tags.push_back("device:cpu");
  if (gpu) tags.push_back("device:gpu");
  return tags;
}

std::string describe_host(const HostDevices& devices) {
  std::string out;
  for (const auto& name : devices.cuda) out += (out.empty() ? "" : "; ") + name + " (CUDA)";
  for (const auto& d : devices.opencl) out += (out.empty() ? "" : "; ") + d.name + " (OpenCL, " + d.platform + ")";
  return out.empty() ? "no devices" : out;
}

}  // namespace kforge::harness
