// The cuda backend on a real GPU: a launch plan through NVRTC + the driver API computes
// silu(x) * y like the CPU, guard regions catch writes past a buffer, device events time
// the launches, alone and in a batch. Skipped (with the reason) where no CUDA driver or device is present.
// Test: ctest -R harness_cuda_backend (label gpu; bench/gpu/run_device.sh runs it on the H100).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "worker/harness/cuda_backend.h"
#include "worker/harness/kernel_backend.h"

namespace kforge::harness {
namespace {

std::unique_ptr<KernelBackend> backend_or_skip(std::string& why) {
  try {
    return make_cuda_backend("");
  } catch (const std::exception& e) {
    why = e.what();
    return nullptr;
  }
}

#define REQUIRE_CUDA(backend)                        \
  std::string why;                                   \
  auto backend = backend_or_skip(why);               \
  if (!backend) GTEST_SKIP() << "no CUDA GPU: " << why

LaunchPlan silu_plan(int64_t n, int64_t extra_write) {
  LaunchPlan plan;
  plan.buffers = {{"x", PlanBuffer::Role::input, 0, n * 4},
                  {"y", PlanBuffer::Role::input, 1, n * 4},
                  {"out", PlanBuffer::Role::output, 0, n * 4}};
  PlanLaunch launch;
  launch.kernel = "silu_mul";
  launch.local[0] = 256;
  launch.global[0] = (n + 255) / 256 * 256;
  launch.args = {{PlanArg::Kind::buffer, 0, 0, 0}, {PlanArg::Kind::buffer, 1, 0, 0}, {PlanArg::Kind::buffer, 2, 0, 0},
                 {PlanArg::Kind::i32, -1, n + extra_write, 0}};
  plan.launches = {launch};
  return plan;
}

const char* kSiluMul = R"(
extern "C" __global__ void silu_mul(const float* x, const float* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { float v = x[i % 1000]; out[i] = v / (1.0f + expf(-v)) * y[i % 1000]; }
}
)";

TEST(CudaBackend, ComputesWhatTheCpuComputes) {
  REQUIRE_CUDA(backend);
  EXPECT_FALSE(backend->is_cpu());
  EXPECT_EQ(backend->describe().value("platform", ""), "CUDA");
  ASSERT_TRUE(backend->build(kSiluMul, "", {"silu_mul"}).ok);
  const int64_t n = 1000;
  std::vector<float> x(n), y(n), out(n);
  std::mt19937 rng(3);
  std::normal_distribution<float> dist;
  for (int64_t i = 0; i < n; ++i) x[i] = dist(rng), y[i] = dist(rng);
  LaunchPlan plan = silu_plan(n, 0);
  auto bx = backend->allocate(n * 4), by = backend->allocate(n * 4), bo = backend->allocate(n * 4);
  bx->write(x.data());
  by->write(y.data());
  bo->fill(0xFF);
  auto bound = backend->bind(plan, {bx.get(), by.get(), bo.get()});
  TimingSample sample = backend->launch(*bound);
  EXPECT_GT(sample.device_ms, 0.0);
  EXPECT_TRUE(bo->guards_intact());
  bo->read(out.data());
  for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(out[i], x[i] / (1 + std::exp(-x[i])) * y[i], 1e-5) << i;
}

TEST(CudaBackend, WritePastTheOutputIsCaughtByTheGuard) {
  REQUIRE_CUDA(backend);
  ASSERT_TRUE(backend->build(kSiluMul, "", {"silu_mul"}).ok);
  const int64_t n = 1000;
  std::vector<float> x(n, 1.0f);
  LaunchPlan plan = silu_plan(n, 64);  // n + 64 elements written into an n-element output
  auto bx = backend->allocate(n * 4), by = backend->allocate(n * 4), bo = backend->allocate(n * 4);
  bx->write(x.data());
  by->write(x.data());
  bo->fill(0xFF);
  auto bound = backend->bind(plan, {bx.get(), by.get(), bo.get()});
  backend->launch(*bound);
  EXPECT_FALSE(bo->guards_intact());
  EXPECT_TRUE(bx->guards_intact());
}

// A batch of timed runs (the dense loop): every plan in it runs, on its own buffers, and
// each gets its own device time.
TEST(CudaBackend, BatchRunsEveryPlanAndTimesEach) {
  REQUIRE_CUDA(backend);
  ASSERT_TRUE(backend->build(kSiluMul, "", {"silu_mul"}).ok);
  const int64_t n = 1000;
  LaunchPlan plan = silu_plan(n, 0);
  std::vector<std::unique_ptr<DeviceBuffer>> buffers;
  std::vector<std::unique_ptr<BoundPlan>> bound;
  std::vector<BoundPlan*> plans;
  for (int set = 0; set < 3; ++set) {
    std::vector<float> x(n, static_cast<float>(set + 1)), y(n, 2.0f);
    for (int b = 0; b < 3; ++b) buffers.push_back(backend->allocate(n * 4));
    auto* bx = buffers[buffers.size() - 3].get();
    auto* by = buffers[buffers.size() - 2].get();
    auto* bo = buffers[buffers.size() - 1].get();
    bx->write(x.data());
    by->write(y.data());
    bo->fill(0xFF);
    bound.push_back(backend->bind(plan, {bx, by, bo}));
    plans.push_back(bound.back().get());
  }
  std::vector<TimingSample> samples = backend->launch_batch(plans);
  ASSERT_EQ(samples.size(), 3u);
  for (int set = 0; set < 3; ++set) {
    EXPECT_GT(samples[set].device_ms, 0.0) << set;
    std::vector<float> out(n);
    buffers[3 * set + 2]->read(out.data());
    const float v = static_cast<float>(set + 1);
    EXPECT_NEAR(out[n - 1], v / (1 + std::exp(-v)) * 2.0f, 1e-5) << set;
  }
}

}  // namespace
// The inputs-unchanged check on the device: the same bytes give the same keyed print, one
// changed byte (in the 8-byte words or the odd tail) or another key gives another.
TEST(CudaBackend, FingerprintFollowsTheBytesAndTheKey) {
  REQUIRE_CUDA(backend);
  const int64_t bytes = (int64_t{1} << 20) + 5;  // words and a 5-byte tail
  std::vector<uint8_t> data(static_cast<size_t>(bytes));
  std::mt19937 rng(7);
  for (auto& byte : data) byte = static_cast<uint8_t>(rng());
  auto buffer = backend->allocate(bytes);
  buffer->write(data.data());
  auto first = buffer->fingerprint(11, 13);
  ASSERT_TRUE(first.has_value()) << "the CUDA backend fingerprints on the device";
  EXPECT_EQ(buffer->fingerprint(11, 13), first);
  EXPECT_NE(buffer->fingerprint(12, 13), first);
  for (int64_t at : {int64_t{0}, bytes / 2, bytes - 1}) {
    auto changed = data;
    changed[static_cast<size_t>(at)] ^= 0x01;
    buffer->write(changed.data());
    EXPECT_NE(buffer->fingerprint(11, 13), first) << "byte " << at;
    int64_t first_diff = -1;
    EXPECT_FALSE(buffer->matches(data.data(), first_diff));
    EXPECT_EQ(first_diff, at);
  }
  buffer->write(data.data());
  EXPECT_EQ(buffer->fingerprint(11, 13), first);
}

}  // namespace kforge::harness
