// Shared ops and known-correct kernels for the checker and adversarial tests
// (small shapes so the suite stays quick on PoCL).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "worker/harness/checker.h"
#include "worker/harness/devices.h"

namespace kforge::harness::testing {

using spec::Dist;
using spec::DistKind;
using spec::DType;
using spec::InputSpec;
using spec::OpSpec;

#define REQUIRE_OPENCL()                                                                           \
  if (::kforge::harness::list_devices().empty()) GTEST_SKIP() << "no OpenCL device on this host (install pocl-opencl-icd)"

inline InputSpec input(const std::string& name, std::vector<int64_t> shape, Dist dist = {DistKind::normal, 0, 1}) {
  return InputSpec{name, std::move(shape), DType::float32, dist};
}

// The test venv's interpreter (scripts/python-env.sh) when it exists, and Triton's CPU
// interpreter: the runner then runs Triton modules on this machine.
inline std::string interpreter_python() {
  std::string venv = std::string(KFORGE_BIN_DIR) + "/../py/bin/python";
  if (const char* configured = std::getenv("KFORGE_PYTHON")) return configured;
  return std::ifstream(venv).good() ? venv : "python3";
}

inline bool triton_importable(const std::string& python) {
  return std::system((python + " -c 'import torch, triton' >/dev/null 2>&1").c_str()) == 0;
}

// Skips unless `python` (the venv's, or $KFORGE_PYTHON) imports torch and triton; then
// the runner uses Triton's CPU interpreter.
#define REQUIRE_TRITON(python)                                                                    \
  std::string python = ::kforge::harness::testing::interpreter_python();                          \
  if (!::kforge::harness::testing::triton_importable(python))                                     \
    GTEST_SKIP() << python << " cannot import torch and triton (scripts/python-env.sh installs them)"; \
  setenv("TRITON_INTERPRET", "1", 1)

//! True on a host with an NVIDIA GPU and its driver; `why` says what is missing otherwise.
inline bool have_nvidia_gpu(std::string& why) {
  if (!std::filesystem::exists("/dev/nvidia0")) {
    why = "no /dev/nvidia0";
    return false;
  }
  if (std::system("nvidia-smi -L >/dev/null 2>&1") != 0) {
    why = "nvidia-smi -L fails (no driver or no device)";
    return false;
  }
  return true;
}

//! Quick settings: no timing unless a test asks, short time limits.
inline CheckOptions fast_options() {
  CheckOptions options;
  options.time = false;
  options.time_budget_s = 0.2;
  options.trial_timeout_s = 5;
  options.secret_seed = 12345;
  return options;
}

//! Settings for Triton programs in the CPU interpreter (REQUIRE_TRITON gives `python`): one
//! seeded trial, and 120 s per trial, because the interpreter runs every program instance in
//! Python, one after another (far above the GPU-minded 5 s of fast_options).
inline CheckOptions interpreter_options(const std::string& python) {
  CheckOptions options = fast_options();
  options.target = "triton";
  options.device = "cpu";
  options.python = python;
  options.trials = 1;
  options.trial_timeout_s = 120;
  return options;
}

inline OpSpec silu_mul_op() {
  OpSpec spec;
  spec.name = "silu_mul";
  spec.source = "def forward(x: Tensor, y: Tensor) -> Tensor:\n    return torch.silu(x) * y\n";
  spec.inputs = {input("x", {64, 100}), input("y", {64, 100}, {DistKind::uniform, -1, 1})};
  spec.extra_shapes = {{{"x", {33, 7}}, {"y", {33, 7}}}};
  spec.atol = 1e-5;
  spec.rtol = 1e-5;
  return spec;
}

inline OpSpec softmax_op() {
  OpSpec spec;
  spec.name = "row_softmax";
  spec.source = "def forward(x):\n    return torch.softmax(x, -1)\n";
  spec.inputs = {input("x", {32, 100})};
  spec.extra_shapes = {{{"x", {5, 333}}}};
  spec.atol = 1e-6;
  spec.rtol = 1e-4;
  return spec;
}

inline OpSpec matmul_op() {
  OpSpec spec;
  spec.name = "matmul";
  spec.source = "def forward(a, b):\n    return a @ b\n";
  spec.inputs = {input("a", {64, 48}), input("b", {48, 80})};
  spec.extra_shapes = {{{"a", {33, 17}}, {"b", {17, 29}}}};
  spec.atol = 1e-4;
  spec.rtol = 1e-4;
  return spec;
}

inline OpSpec sum_op() {
  OpSpec spec;
  spec.name = "total_sum";
  spec.source = "def forward(x):\n    return torch.sum(x)\n";
  spec.inputs = {input("x", {1000, 37})};
  spec.extra_shapes = {{{"x", {17, 3}}}};
  spec.atol = 1e-2;
  spec.rtol = 1e-4;
  return spec;
}

inline const char* kSiluMulKernel = R"(// kforge-launch: silu_mul grid=cdiv(numel(x),256) block=256 args=x,y,out,numel(x)
__kernel void silu_mul(__global const float* x, __global const float* y,
                       __global float* out, int n) {
  int i = get_global_id(0);
  if (i < n) { float v = x[i]; out[i] = v / (1.0f + exp(-v)) * y[i]; }
}
)";

inline const char* kSoftmaxKernel = R"(// kforge-launch: softmax_rows grid=cdiv(x.size(0),64) block=64 args=x,out,x.size(0),x.size(1)
__kernel void softmax_rows(__global const float* x, __global float* out, int rows, int cols) {
  int row = get_global_id(0);
  if (row >= rows) return;
  __global const float* in = x + row * cols;
  float m = -INFINITY;
  for (int c = 0; c < cols; ++c) m = fmax(m, in[c]);
  float s = 0.0f;
  for (int c = 0; c < cols; ++c) s += exp(in[c] - m);
  for (int c = 0; c < cols; ++c) out[row * cols + c] = exp(in[c] - m) / s;
}
)";

inline const char* kTiledMatmulKernel = R"(// A 16x16 tiled matmul through local memory.
// kforge-launch: matmul grid=cdiv(b.size(1),16), cdiv(a.size(0),16) block=16,16 args=a,b,out,a.size(0),b.size(1),a.size(1)
#define TILE 16
__kernel void matmul(__global const float* a, __global const float* b, __global float* c, int M, int N, int K) {
  __local float As[TILE][TILE];
  __local float Bs[TILE][TILE];
  int col = get_global_id(0), row = get_global_id(1);
  int lc = get_local_id(0), lr = get_local_id(1);
  float acc = 0.0f;
  for (int t = 0; t < K; t += TILE) {
    As[lr][lc] = (row < M && t + lc < K) ? a[row * K + t + lc] : 0.0f;
    Bs[lr][lc] = (t + lr < K && col < N) ? b[(t + lr) * N + col] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < TILE; ++k) acc += As[lr][k] * Bs[k][lc];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (row < M && col < N) c[row * N + col] = acc;
}
)";

inline const char* kTwoLaunchSumKernel = R"(// kforge-scratch: partial float cdiv(numel(x), 256)
// kforge-launch: partial_sums grid=cdiv(numel(x),256) block=256 args=x,partial,numel(x)
// kforge-launch: final_sum grid=1 block=1 args=partial,out,cdiv(numel(x),256)
__kernel void partial_sums(__global const float* x, __global float* partial, int n) {
  __local float buf[256];
  int lid = get_local_id(0), i = get_global_id(0);
  buf[lid] = i < n ? x[i] : 0.0f;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = 128; s > 0; s >>= 1) {
    if (lid < s) buf[lid] += buf[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) partial[get_group_id(0)] = buf[0];
}
__kernel void final_sum(__global const float* partial, __global float* out, int parts) {
  float acc = 0.0f;
  for (int p = 0; p < parts; ++p) acc += partial[p];
  out[0] = acc;
}
)";

}  // namespace kforge::harness::testing
