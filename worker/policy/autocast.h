// Mixed precision for the policy: while an AutocastGuard lives, ATen's autocast runs the
// model's matmuls in bfloat16 (or float16 on CUDA) while the weights stay float32 (the
// optimizer's master copy) and the ops autocast keeps in float32 (softmax, log_softmax,
// the norms) stay there. kforge-train's --precision bf16 wraps sampling and scoring in it.
// Test: ctest -R policy_test (Autocast.*).
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <string>

namespace kforge::policy {

//! "float32" (or "fp32", "") -> nullopt: no autocast; "bf16"/"bfloat16" -> kBFloat16;
//! "fp16"/"float16" -> kHalf. Throws std::invalid_argument for anything else.
std::optional<at::ScalarType> parse_precision(const std::string& name);

//! Turns autocast on for one device type at `dtype` for its lifetime, then restores the
//! previous state and drops the cast-weight cache (the next forward sees updated weights).
//! With nullopt it does nothing. float16 autocast exists only on CUDA: std::invalid_argument.
class AutocastGuard {
 public:
  AutocastGuard(at::DeviceType device, std::optional<at::ScalarType> dtype);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  at::DeviceType device_;
  bool active_ = false;
  bool was_enabled_ = false;
  at::ScalarType was_dtype_ = at::kBFloat16;
};

}  // namespace kforge::policy
