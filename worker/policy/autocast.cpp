// AutocastGuard; see autocast.h. ATen's autocast API changed in PyTorch 2.4 (per device
// type instead of per-device functions), so both spellings are here. Test: ctest -R policy_test.
#include "worker/policy/autocast.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <stdexcept>

namespace kforge::policy {
namespace {

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool enabled(at::DeviceType device) { return at::autocast::is_autocast_enabled(device); }
void set_enabled(at::DeviceType device, bool on) { at::autocast::set_autocast_enabled(device, on); }
at::ScalarType get_dtype(at::DeviceType device) { return at::autocast::get_autocast_dtype(device); }
void set_dtype(at::DeviceType device, at::ScalarType dtype) { at::autocast::set_autocast_dtype(device, dtype); }
#else
bool enabled(at::DeviceType device) {
  return device == at::kCUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
}
void set_enabled(at::DeviceType device, bool on) {
  if (device == at::kCUDA) at::autocast::set_enabled(on);
  else at::autocast::set_cpu_enabled(on);
}
at::ScalarType get_dtype(at::DeviceType device) {
  return device == at::kCUDA ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
}
void set_dtype(at::DeviceType device, at::ScalarType dtype) {
  if (device == at::kCUDA) at::autocast::set_autocast_gpu_dtype(dtype);
  else at::autocast::set_autocast_cpu_dtype(dtype);
}
#endif

}  // namespace

std::optional<at::ScalarType> parse_precision(const std::string& name) {
  if (name.empty() || name == "float32" || name == "fp32") return std::nullopt;
  if (name == "bf16" || name == "bfloat16") return at::kBFloat16;
  if (name == "fp16" || name == "float16") return at::kHalf;
  throw std::invalid_argument("precision must be float32, bf16 or fp16, got '" + name + "'");
}

AutocastGuard::AutocastGuard(at::DeviceType device, std::optional<at::ScalarType> dtype) : device_(device) {
  if (!dtype) return;
  if (device != at::kCUDA && device != at::kCPU) throw std::invalid_argument("autocast: only cpu and cuda devices");
  if (device == at::kCPU && *dtype != at::kBFloat16) throw std::invalid_argument("autocast on the CPU is bf16 only");
  was_enabled_ = enabled(device);
  was_dtype_ = get_dtype(device);
  set_dtype(device, *dtype);
  set_enabled(device, true);
  active_ = true;
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  set_enabled(device_, was_enabled_);
  set_dtype(device_, was_dtype_);
  if (!was_enabled_) at::autocast::clear_cache();
}

}  // namespace kforge::policy
