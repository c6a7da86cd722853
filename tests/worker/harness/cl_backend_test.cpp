// The OpenCL backend on real PoCL: device selection by name, build log capture,
// checked calls naming file:line, and guard pages that turn an out-of-bounds access
// into a fault (in a child process so this test survives it).
// Run: ctest -R harness_cl_backend.
#include <gtest/gtest.h>

#include <cstdlib>

#include "worker/harness/cl_backend.h"
#include "worker/harness/sandbox_process.h"

using namespace kforge::harness;

#define REQUIRE_OPENCL() \
  if (list_devices().empty()) GTEST_SKIP() << "no OpenCL device on this host (install pocl-opencl-icd)"

TEST(ClBackend, SelectsByNameAndSaysWhatExists) {
  REQUIRE_OPENCL();
  ClRuntime any("");
  EXPECT_FALSE(any.device().name.empty());
  EXPECT_GT(any.device().compute_units, 0);
  ClRuntime by_platform(any.device().platform.substr(0, 8));
  EXPECT_EQ(by_platform.device().name, any.device().name);
  try {
    ClRuntime none("no-such-device-xyz");
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(any.device().name), std::string::npos) << e.what();
  }
}

TEST(ClBackend, BuildLogIsCapturedAndErrorsNameTheCall) {
  REQUIRE_OPENCL();
  ClRuntime runtime("");
  std::string log;
  auto program = runtime.build("__kernel void f(__global float* p) { p[0] = undefined_name; }", "", log);
  EXPECT_FALSE(program.get());
  EXPECT_NE(log.find("undefined_name"), std::string::npos) << log;
  try {
    KFORGE_CL_CHECK(clFinish(nullptr));
    FAIL() << "expected ClError";
  } catch (const ClError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("cl_backend_test.cpp:"), std::string::npos) << what;
    EXPECT_NE(what.find("clFinish failed: CL_INVALID_COMMAND_QUEUE"), std::string::npos) << what;
  }
}

TEST(ClBackend, RunsAPlanWithEventTimings) {
  REQUIRE_OPENCL();
  ClRuntime runtime("");
  std::string log;
  auto program = runtime.build("__kernel void twice(__global const float* x, __global float* y, int n) {"
                               " int i = get_global_id(0); if (i < n) y[i] = 2.0f * x[i]; }",
                               "", log);
  ASSERT_TRUE(program.get()) << log;
  LaunchPlan plan;
  plan.buffers = {{"x", PlanBuffer::Role::input, 0, 1000 * 4}, {"out", PlanBuffer::Role::output, 0, 1000 * 4}};
  PlanLaunch launch;
  launch.kernel = "twice";
  launch.global[0] = 1024;
  launch.local[0] = 64;
  launch.args = {{PlanArg::Kind::buffer, 0, 0, 0}, {PlanArg::Kind::buffer, 1, 0, 0}, {PlanArg::Kind::i32, -1, 1000, 0}};
  plan.launches = {launch};
  GuardedBuffer x(runtime.context(), 4000, runtime.is_cpu()), y(runtime.context(), 4000, runtime.is_cpu());
  std::vector<float> input(1000), output(1000);
  for (int idx = 0; idx < 1000; ++idx) input[idx] = static_cast<float>(idx);
  x.write(runtime.queue(), input.data());
  y.fill(runtime.queue(), 0xFF);
  auto kernels = create_plan_kernels(program.get(), plan);
  bind_plan_args(kernels, plan, {x.mem(), y.mem()});
  std::vector<ClEvent> events;
  enqueue_plan(runtime.queue(), kernels, plan, &events);
  KFORGE_CL_CHECK(clFinish(runtime.queue()));
  y.read(runtime.queue(), output.data());
  for (int idx = 0; idx < 1000; ++idx) ASSERT_EQ(output[idx], 2.0f * idx);
  EXPECT_TRUE(y.canary_intact(runtime.queue()));
  EXPECT_GE(events_span_ms(events), 0.0);
  EXPECT_EQ(events.size(), 1u);
}

// Runs only inside the child started by the next test (disabled, so a normal run never
// executes it; OpenCL state must not cross a fork, hence a fresh process).
TEST(ClBackend, DISABLED_GuardChildBody) {
  if (!std::getenv("KFORGE_GUARD_CHILD")) return;
  ClRuntime runtime("");
  std::string log;
  auto program = runtime.build("__kernel void oob(__global float* p) { p[get_global_id(0) + 4096] = 1.0f; }", "", log);
  GuardedBuffer buffer(runtime.context(), 1000 * 4, true);
  LaunchPlan plan;
  plan.buffers = {{"out", PlanBuffer::Role::output, 0, 4000}};
  PlanLaunch launch;
  launch.kernel = "oob";
  launch.args = {{PlanArg::Kind::buffer, 0, 0, 0}};
  plan.launches = {launch};
  auto kernels = create_plan_kernels(program.get(), plan);
  bind_plan_args(kernels, plan, {buffer.mem()});
  enqueue_plan(runtime.queue(), kernels, plan, nullptr);
  clFinish(runtime.queue());
  std::_Exit(0);  // reached only if the write did not fault
}

TEST(ClBackend, WritePastTheEndFaultsOnGuardPage) {
  REQUIRE_OPENCL();
  ClRuntime runtime("");
  if (!runtime.is_cpu()) GTEST_SKIP() << "guard pages apply to CPU devices only";
  setenv("KFORGE_GUARD_CHILD", "1", 1);
  std::string error;
  auto child = SandboxProcess::start({self_exe_dir() + "/harness_cl_backend_test", "--gtest_also_run_disabled_tests",
                                      "--gtest_filter=ClBackend.DISABLED_GuardChildBody"},
                                     {}, -1, error);
  unsetenv("KFORGE_GUARD_CHILD");
  ASSERT_TRUE(child) << error;
  ASSERT_TRUE(child->wait_exit(std::chrono::steady_clock::now() + std::chrono::seconds(60)));
  EXPECT_TRUE(child->signalled()) << child->describe_exit();
  EXPECT_NE(child->describe_exit().find("SIGSEGV"), std::string::npos) << child->describe_exit();
}
