// The checker end to end on real PoCL: correct kernels that must pass (elementwise,
// row softmax, tiled matmul, two-launch reduction with scratch), timing and the
// result cache, the outcome ladder's early stages. Adversarial candidates live in
// adversarial_test.cpp. Run: ctest -R harness_checker.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/worker/harness/harness_fixtures.h"

using namespace kforge::harness;
using namespace kforge::spec;
using namespace kforge::harness::testing;

TEST(Checker, ElementwiseSiluMulIsCorrectAndTimed) {
  REQUIRE_OPENCL();
  CheckOptions options = fast_options();
  options.time = true;
  auto result = check_candidate(silu_mul_op(), kSiluMulKernel, options);
  ASSERT_EQ(result.outcome, Outcome::correct) << result.message;
  EXPECT_EQ(result.trials_passed, 5 + 1 + 1 + 1)
      << "5 fresh trials, the secret-seed trial, one extra shape set, the unpublished shapes";
  ASSERT_TRUE(result.kernel && result.baseline);
  EXPECT_GT(result.kernel->median_ms, 0);
  EXPECT_GE(result.kernel->runs, 5);
  EXPECT_GT(result.baseline->median_ms, 0);
  EXPECT_NEAR(result.speedup, result.baseline->median_ms / result.kernel->median_ms, 1e-9);
  EXPECT_FALSE(result.environment.device.empty());
  EXPECT_EQ(result.environment.torch_threads, result.environment.compute_units);
  EXPECT_NE(result.environment.baseline.find("allocated by the op on every call"), std::string::npos)
      << "the result says how the eager baseline allocates: " << result.environment.baseline;
  EXPECT_NE(result.environment.baseline.find("from a caching allocator that reuses freed blocks"), std::string::npos)
      << "the default is the steady state: " << result.environment.baseline;
  EXPECT_FALSE(result.weak_test);
  EXPECT_EQ(result.program_hash.size(), 64u);
  auto json = nlohmann::json::parse(result.to_json());
  EXPECT_EQ(json["outcome"], "correct");
  EXPECT_TRUE(json.contains("speedup"));
  EXPECT_TRUE(json["environment"].contains("opencl_c_version"));
}

TEST(Checker, DefaultBaselineAllocatorIsNamedAndKeptApartInTheResultCache) {
  REQUIRE_OPENCL();
  CheckOptions options = fast_options();
  options.time = true;
  options.baseline_allocator = BaselineAllocator::default_cpu;
  auto result = check_candidate(silu_mul_op(), kSiluMulKernel, options);
  ASSERT_EQ(result.outcome, Outcome::correct) << result.message;
  ASSERT_TRUE(result.baseline);
  EXPECT_GT(result.baseline->median_ms, 0);
  EXPECT_NE(result.environment.baseline.find("libtorch's default CPU allocator, glibc malloc"), std::string::npos)
      << result.environment.baseline;
  EXPECT_EQ(result.environment.baseline.find("caching"), std::string::npos) << result.environment.baseline;
  CheckOptions caching = options;
  caching.baseline_allocator = BaselineAllocator::caching;
  EXPECT_NE(result_store_key(result, options), result_store_key(result, caching))
      << "a stored timing against one allocator is never served for the other";
}

// Another process's hold on the timing lock: a fresh file, locked, let go `hold` after it was
// taken or as soon as let_go() is called, whichever comes first.
class HeldTimingLock {
 public:
  explicit HeldTimingLock(std::chrono::steady_clock::duration hold) {
    fd_ = ::mkostemp(path_, O_CLOEXEC);  // not inherited: a sandbox child would hold the lock
    locked_ = fd_ >= 0 && ::flock(fd_, LOCK_EX) == 0;
    const auto until = std::chrono::steady_clock::now() + hold;
    releaser_ = std::thread([this, until] {
      while (!let_go_ && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (fd_ >= 0) ::close(fd_);
    });
  }
  ~HeldTimingLock() {
    let_go();
    std::remove(path_);
  }
  void let_go() {
    let_go_ = true;
    if (releaser_.joinable()) releaser_.join();
  }
  bool locked() const { return locked_; }
  const char* path() const { return path_; }

 private:
  char path_[64] = "/tmp/kforge_timing_lock_XXXXXX";
  int fd_ = -1;
  bool locked_ = false;
  std::atomic<bool> let_go_{false};
  std::thread releaser_;
};

// Checks side by side take turns to time: while another holder has the timing lock, a
// correct candidate verifies but its timing waits for the lock (the check alone takes
// about a second here).
TEST(Checker, TimingWaitsForTheTimingLock) {
  REQUIRE_OPENCL();
  const auto held = std::chrono::seconds(5);
  const auto started = std::chrono::steady_clock::now();
  HeldTimingLock other(held);
  ASSERT_TRUE(other.locked());
  CheckOptions options = fast_options();
  options.time = true;
  options.timing_lock = other.path();
  auto result = check_candidate(silu_mul_op(), kSiluMulKernel, options);
  const auto wall = std::chrono::steady_clock::now() - started;
  ASSERT_EQ(result.outcome, Outcome::correct) << result.message;
  ASSERT_TRUE(result.kernel);
  EXPECT_GE(wall, held) << "the check finished while another process held the timing lock";
  EXPECT_GT(result.time_ms, 0);
}

// A cancel while waiting for the timing lock ends the wait: the check returns long before
// the holder lets go.
TEST(Checker, StopEndsTheWaitForTheTimingLock) {
  REQUIRE_OPENCL();
  const auto started = std::chrono::steady_clock::now();
  HeldTimingLock other(std::chrono::seconds(40));  // without the stop the check would wait this long
  ASSERT_TRUE(other.locked());
  CheckOptions options = fast_options();
  options.time = true;
  options.timing_lock = other.path();
  options.stop_requested = [started] { return std::chrono::steady_clock::now() - started > std::chrono::seconds(3); };
  auto result = check_candidate(silu_mul_op(), kSiluMulKernel, options);
  const auto wall = std::chrono::steady_clock::now() - started;
  EXPECT_LT(wall, std::chrono::seconds(20)) << "the check waited for the lock after a stop: " << result.message;
}

TEST(Checker, RowSoftmaxIsCorrect) {
  REQUIRE_OPENCL();
  auto result = check_candidate(softmax_op(), kSoftmaxKernel, fast_options());
  EXPECT_EQ(result.outcome, Outcome::correct) << result.message;
}

TEST(Checker, TiledMatmulIsCorrect) {
  REQUIRE_OPENCL();
  auto result = check_candidate(matmul_op(), kTiledMatmulKernel, fast_options());
  EXPECT_EQ(result.outcome, Outcome::correct) << result.message;
}

TEST(Checker, TwoLaunchReductionWithScratchIsCorrect) {
  REQUIRE_OPENCL();
  auto result = check_candidate(sum_op(), kTwoLaunchSumKernel, fast_options());
  EXPECT_EQ(result.outcome, Outcome::correct) << result.message;
}

// Training's checkers start children that build no warm-up kernel (CheckOptions::warm_up):
// the candidate is then the child's first build, after its seccomp filter has narrowed.
// Outcomes must be what a warmed child gives: correct kernels pass, a wrong one is caught.
TEST(Checker, ChildrenWithoutWarmUpGiveTheSameOutcomes) {
  REQUIRE_OPENCL();
  CheckOptions options = fast_options();
  options.warm_up = false;
  auto silu = check_candidate(silu_mul_op(), kSiluMulKernel, options);
  EXPECT_EQ(silu.outcome, Outcome::correct) << silu.message;
  auto matmul = check_candidate(matmul_op(), kTiledMatmulKernel, options);
  EXPECT_EQ(matmul.outcome, Outcome::correct) << matmul.message;
  std::string wrong = kSiluMulKernel;
  wrong.replace(wrong.find("* y[i]"), 6, "+ y[i]");
  auto result = check_candidate(silu_mul_op(), wrong, options);
  EXPECT_EQ(result.outcome, Outcome::wrong_output) << result.message;
}

TEST(Checker, CachesIdenticalProgramsPerChecker) {
  REQUIRE_OPENCL();
  std::string error;
  auto checker = Checker::create(silu_mul_op(), fast_options(), error);
  ASSERT_TRUE(checker) << error;
  auto first = checker->check(kSiluMulKernel);
  ASSERT_EQ(first.outcome, Outcome::correct) << first.message;
  EXPECT_FALSE(first.cached);
  auto second = checker->check(kSiluMulKernel);
  EXPECT_TRUE(second.cached);
  EXPECT_EQ(second.outcome, Outcome::correct);
  EXPECT_EQ(second.cache_key, first.cache_key);
  EXPECT_LT(second.total_ms, 5.0);
  // A different text is a new candidate, even if it only differs in a comment.
  auto third = checker->check(std::string(kSiluMulKernel) + "// v2\n");
  EXPECT_FALSE(third.cached);
  EXPECT_NE(third.program_hash, first.program_hash);
  EXPECT_EQ(third.outcome, Outcome::correct) << third.message;
}

TEST(Checker, EarlyOutcomesFormatRulesCompile) {
  REQUIRE_OPENCL();
  std::string error;
  auto checker = Checker::create(silu_mul_op(), fast_options(), error);
  ASSERT_TRUE(checker) << error;
  auto format = checker->check("__kernel void f(__global float* out) {}");
  EXPECT_EQ(format.outcome, Outcome::format_error);
  EXPECT_NE(format.message.find("kforge-launch"), std::string::npos);
  auto compile = checker->check(
      "// kforge-launch: f grid=1 block=1 args=x,y,out\n"
      "__kernel void f(__global const float* x, __global const float* y, __global float* out) { out[0] = x[0] +; }\n");
  EXPECT_EQ(compile.outcome, Outcome::compile_error);
  EXPECT_NE(compile.message.find("error"), std::string::npos) << compile.message;
  auto unknown = checker->check(
      "// kforge-launch: f grid=1 block=1 args=x,z,out\n"
      "__kernel void f(__global const float* x, __global const float* y, __global float* out) { }\n");
  EXPECT_EQ(unknown.outcome, Outcome::rule_violation);
  EXPECT_EQ(unknown.rule, "unknown_buffer");
  EXPECT_NE(unknown.message.find("inputs: x, y"), std::string::npos) << unknown.message;
}

TEST(Checker, WeakTestFlaggedForConstantReference) {
  REQUIRE_OPENCL();
  OpSpec spec = silu_mul_op();
  spec.source = "def forward(x, y):\n    return x * 0.0\n";
  auto result = check_candidate(spec,
                                "// kforge-launch: z grid=cdiv(numel(out),64) block=64 args=x,y,out,numel(out)\n"
                                "__kernel void z(__global const float* x, __global const float* y, __global float* out, int n)"
                                " { int i = get_global_id(0); if (i < n) out[i] = 0.0f; }\n",
                                fast_options());
  EXPECT_EQ(result.outcome, Outcome::correct) << result.message;
  EXPECT_TRUE(result.weak_test) << "a zero kernel passing says nothing: the op is a weak test";
}

TEST(Checker, BadOpIsReportedNotThrown) {
  REQUIRE_OPENCL();
  OpSpec spec = silu_mul_op();
  spec.source = "def forward(x, y):\n    return x @ y\n";  // [64,100] @ [64,100] fails
  std::string error;
  EXPECT_FALSE(Checker::create(spec, fast_options(), error));
  EXPECT_NE(error.find("reference fails"), std::string::npos) << error;
}
