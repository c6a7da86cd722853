// The worker's pool of pre-started children (child_pool.h) with real children: kforge-sandbox
// on PoCL and the Python runner (reference role, the GPU path run on the CPU). A Checker takes
// warm children, gives them its arena and checks with them; each take starts a replacement; a
// pooled child killed while it waits is dropped, never handed out; where a Checker's set-up and
// a check's timing went adds up; a disturbed eager baseline is not re-taken while the machine is
// busy. Test: ctest -R harness_child_pool.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/worker/harness/harness_fixtures.h"
#include "worker/harness/child_pool.h"
#include "worker/harness/sandbox_process.h"

namespace kforge::harness::testing {
namespace {

using namespace std::chrono_literals;

// What a Checker with fast_options() on PoCL starts for its candidates (checker.cpp's recipe).
SandboxLaunch pocl_launch(const CheckOptions& options) {
  SandboxLaunch launch;
  launch.argv = {helper_binary_path("kforge-sandbox"), "--target", "opencl", "--device", options.device};
  launch.kind = SandboxKind::kernel_cpu;
  launch.limits.cpu_seconds = options.sandbox_cpu_s;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  launch.limits.data_bytes = std::min<int64_t>(options.sandbox_memory_bytes, int64_t{pages} * page / 4 * 3);
  std::string error;
  launch.gpu_gate_fd = process_gpu_gate_fd(error);
  return launch;
}

// The reference runner on the CPU, as a Checker with runner_reference starts it.
SandboxLaunch runner_reference_launch(const CheckOptions& options) {
  SandboxLaunch launch = pocl_launch(options);
  launch.argv = {resolve_program(options.python), helper_binary_path("runner/kforge_runner.py"), "--role", "reference",
                 "--device", "cpu"};
  launch.kind = SandboxKind::python;
  return launch;
}

// Kills `pid` and waits until it is a zombie with no thread left (dead and reapable, not yet
// reaped by its parent, the pool): a killed leader shows "Z" while its other threads (PoCL's,
// Python's) still exit, and until they have, waitpid does not report it.
void kill_and_wait_dead(pid_t pid) {
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  const std::string proc = "/proc/" + std::to_string(pid);
  for (int poll_idx = 0; poll_idx < 500; ++poll_idx) {
    std::ifstream stat(proc + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    auto close_paren = text.rfind(')');
    if (close_paren == std::string::npos) return;  // already reaped
    std::error_code error;
    size_t threads = 0;
    for (auto it = std::filesystem::directory_iterator(proc + "/task", error);
         !error && it != std::filesystem::directory_iterator(); ++it)
      ++threads;
    if (close_paren + 2 < text.size() && text[close_paren + 2] == 'Z' && threads <= 1) return;
    std::this_thread::sleep_for(10ms);
  }
  FAIL() << "pid " << pid << " did not die";
}

std::string read_source(const std::string& name) {
  std::ifstream in(std::string(KFORGE_SOURCE_DIR) + "/tests/worker/harness/triton/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

CheckOptions pooled_pocl_options(const std::shared_ptr<ChildPool>& pool) {
  CheckOptions options = fast_options();
  options.device = "cpu";
  options.child_pool = pool;
  return options;
}

TEST(ChildPool, CheckerTakesWarmChildrenAttachesItsArenaAndThePoolReplacesThem) {
  REQUIRE_OPENCL();
  auto pool = std::make_shared<ChildPool>(2);
  CheckOptions options = pooled_pocl_options(pool);
  Checker::warm_pool(options);
  pool->settle();
  const SandboxLaunch launch = pocl_launch(options);
  ASSERT_EQ(pool->size(launch), 2) << "warm_pool starts the pool's depth of children for the Checker's recipe";
  const auto warm_pids = pool->pids(launch);
  const int started_before = pool->started();

  std::string error;
  auto checker = Checker::create(silu_mul_op(), options, error);
  ASSERT_TRUE(checker) << error;
  EXPECT_GE(checker->setup_phases().pooled_children, 1) << "the first candidate child came warm from the pool";
  pool->settle();
  EXPECT_EQ(pool->started(), started_before) << "on a CPU nothing starts before a check's timed runs are over";
  EXPECT_EQ(pool->size(launch), 1);

  // The pooled children compute on this op's arena: a correct kernel passes every trial, a
  // wrong one is caught, so inputs and outputs reached them through the attach.
  auto good = checker->check(kSiluMulKernel);
  EXPECT_EQ(good.outcome, Outcome::correct) << good.message;
  EXPECT_EQ(good.trials_passed, 8) << "5 fresh seeds, the secret seed, one extra shape set, the unpublished shapes";
  pool->settle();
  EXPECT_GT(pool->started(), started_before) << "the check over, the children taken are replaced";
  const auto now_pids = pool->pids(launch);
  EXPECT_EQ(now_pids.size(), 2u) << "topped up to its depth";
  for (pid_t pid : now_pids) EXPECT_NE(pid, warm_pids[0]) << "the child handed to the Checker (the oldest) is not kept";
  std::string wrong = kSiluMulKernel;
  wrong.replace(wrong.find("* y[i]"), 6, "* 2.0f");
  ASSERT_NE(wrong, kSiluMulKernel);
  auto bad = checker->check(wrong);
  EXPECT_EQ(bad.outcome, Outcome::wrong_output) << bad.message;
}

TEST(ChildPool, KilledPooledChildIsReplacedNotHandedOut) {
  REQUIRE_OPENCL();
  ChildPool pool(2);
  const SandboxLaunch launch = pocl_launch(pooled_pocl_options(nullptr));
  pool.warm(launch);
  pool.settle();
  auto pids = pool.pids(launch);
  ASSERT_EQ(pids.size(), 2u);
  kill_and_wait_dead(pids[0]);  // the oldest, which take() would hand out first
  auto taken = pool.take(launch);
  ASSERT_TRUE(taken) << "the live child is handed out";
  EXPECT_NE(taken->pid(), pids[0]) << "the killed child is dropped, not handed out";
  EXPECT_EQ(taken->pid(), pids[1]);
  std::string error;
  EXPECT_TRUE(taken->await_ready(error)) << error;
  EXPECT_TRUE(taken->alive());
  pool.refill();
  pool.settle();
  auto now = pool.pids(launch);
  EXPECT_EQ(now.size(), 2u) << "the dead child and the taken one are both replaced";
  for (pid_t pid : now) EXPECT_TRUE(pid != pids[0] && pid != pids[1]);
}

// A worker claims its first job right after warming its pool (the job was queued before it
// started): the take waits for the start asked for, not for readiness, and never comes back
// empty-handed while the pool's thread is about to start the child.
TEST(ChildPool, TakeRightAfterWarmGetsTheChildBeingStarted) {
  REQUIRE_OPENCL();
  ChildPool pool(1);
  const SandboxLaunch launch = pocl_launch(pooled_pocl_options(nullptr));
  pool.warm(launch);
  auto child = pool.take(launch);
  ASSERT_TRUE(child) << "the start warm() asked for is waited for";
  EXPECT_EQ(pool.started(), 1);
  std::string error;
  EXPECT_TRUE(child->await_ready(error)) << error;
  EXPECT_EQ(pool.size(launch), 0) << "nothing starts on take: replacements wait for refill()";
}

// A GPU worker keeps one triton runner per candidate it compiles ahead: warm() with a depth
// keeps that many of the kind (more than the pool's own depth), refill() restores them.
TEST(ChildPool, WarmWithADepthKeepsThatManyOfTheKind) {
  REQUIRE_OPENCL();
  ChildPool pool(1);
  const SandboxLaunch launch = pocl_launch(pooled_pocl_options(nullptr));
  pool.warm(launch, 3);
  pool.settle();
  EXPECT_EQ(pool.size(launch), 3);
  auto first = pool.take(launch);
  auto second = pool.take(launch);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(pool.size(launch), 1);
  pool.refill();
  pool.settle();
  EXPECT_EQ(pool.size(launch), 3) << "refill restores the kind's own depth";
  pool.warm(launch);
  pool.settle();
  EXPECT_EQ(pool.size(launch), 3) << "a later warm without a depth keeps the deeper one";
  EXPECT_EQ(pool.started(), 5);
}

// A child dies with the thread that spawned it (the jail's PR_SET_PDEATHSIG): the pool starts
// its children from its own thread, so asking from a thread that then ends costs nothing.
TEST(ChildPool, ChildrenOutliveTheThreadThatAskedForThem) {
  REQUIRE_OPENCL();
  ChildPool pool(1);
  const SandboxLaunch launch = pocl_launch(pooled_pocl_options(nullptr));
  std::thread asker([&] { pool.warm(launch); });
  asker.join();
  pool.settle();
  std::this_thread::sleep_for(200ms);  // a SIGKILL from the asker's exit would have landed
  ASSERT_EQ(pool.size(launch), 1);
  auto child = pool.take(launch);
  ASSERT_TRUE(child);
  std::string error;
  EXPECT_TRUE(child->await_ready(error)) << error;
  EXPECT_TRUE(child->alive());
}

// The GPU path's structure (reference runner, attach, baselines timed in the runner) run on
// the CPU: the candidate runner in Triton's interpreter and the reference runner pooled, one
// of them killed while it waited.
TEST(ChildPool, RunnerReferencePathWithPooledRunnersAndAKilledOne) {
  REQUIRE_OPENCL();
  REQUIRE_TRITON(python);
  auto pool = std::make_shared<ChildPool>(2);
  CheckOptions options = fast_options();
  options.target = "triton";
  options.device = "cpu";
  options.python = python;
  options.trials = 2;
  options.time = true;
  options.runner_reference = true;
  options.compile_baseline = false;  // torch.compile is not in Debian's torch 1.13
  options.child_pool = pool;
  Checker::warm_pool(options);
  pool->settle();
  const SandboxLaunch reference = runner_reference_launch(options);
  auto reference_pids = pool->pids(reference);
  ASSERT_EQ(reference_pids.size(), 2u) << "warm_pool starts reference runners for the runner path";
  kill_and_wait_dead(reference_pids[0]);

  spec::OpSpec op;
  op.name = "add";
  op.source = "def forward(x: Tensor, y: Tensor) -> Tensor:\n    return x + y\n";
  op.inputs = {input("x", {64, 100}), input("y", {64, 100})};
  op.extra_shapes = {{{"x", {33, 7}}, {"y", {33, 7}}}};
  op.atol = op.rtol = 1e-5;
  std::string error;
  auto checker = Checker::create(op, options, error);
  ASSERT_TRUE(checker) << error;
  const SetupPhases& setup = checker->setup_phases();
  EXPECT_GE(setup.pooled_children, 2) << "candidate runner and reference runner came warm";
  EXPECT_GT(setup.gpu_reference_ms, 0) << "the reference outputs came from the runner";
  auto result = checker->check(read_source("good_add.py"));
  ASSERT_EQ(result.outcome, Outcome::correct) << result.message;
  ASSERT_TRUE(result.baseline) << "eager timed by the reference runner";
  EXPECT_NE(result.environment.baseline.find("Python runner"), std::string::npos) << result.environment.baseline;
  EXPECT_GT(result.time_eager_ms, 0);
  auto wrong = checker->check(read_source("skip_write.py"));
  EXPECT_EQ(wrong.outcome, Outcome::wrong_output) << wrong.message;
}

TEST(ChildPool, SetupAndTimingPhasesAddUp) {
  REQUIRE_OPENCL();
  CheckOptions options = fast_options();
  options.device = "cpu";
  options.time = true;
  std::string error;
  auto checker = Checker::create(silu_mul_op(), options, error);
  ASSERT_TRUE(checker) << error;
  const SetupPhases& setup = checker->setup_phases();
  const double parts = setup.reference_compile_ms + setup.inputs_ms + setup.reference_ms + setup.arena_ms +
                       setup.sandbox_start_ms + setup.gpu_reference_start_ms + setup.gpu_reference_ms;
  EXPECT_GT(setup.total_ms, 0);
  EXPECT_LE(parts, setup.total_ms + 1) << setup.to_json();
  EXPECT_GE(parts, 0.8 * setup.total_ms - 50) << "the named phases are where create() spent its time: "
                                               << setup.to_json();
  EXPECT_GT(setup.sandbox_start_ms, 0) << setup.to_json();
  EXPECT_EQ(setup.pooled_children, 0) << "no pool given";

  auto first = checker->check(kSiluMulKernel);
  ASSERT_EQ(first.outcome, Outcome::correct) << first.message;
  const double timed = first.time_kernel_ms + first.time_eager_ms + first.time_compile_ms;
  EXPECT_GT(first.time_kernel_ms, 0);
  EXPECT_GT(first.time_eager_ms, 0) << "the first check times the eager baseline";
  EXPECT_LE(timed, first.time_ms + 1) << first.to_json();
  EXPECT_GE(timed, 0.9 * first.time_ms - 20) << first.to_json();
  EXPECT_NEAR(first.compile_ms + first.run_ms + first.time_ms + first.overhead_ms, first.total_ms, 1.0);
  auto parsed = nlohmann::json::parse(first.to_json())["phases_ms"];
  EXPECT_DOUBLE_EQ(parsed["time_kernel"].get<double>(), first.time_kernel_ms);
  EXPECT_DOUBLE_EQ(parsed["time_eager"].get<double>(), first.time_eager_ms);
}

// A disturbed eager baseline is re-taken on a later check only when that check's kernel window
// was quiet: with every window counted as disturbed (max_contention below any reading), the
// first check times eager and the next ones reuse it instead of paying for it again.
TEST(ChildPool, DisturbedBaselineIsNotReTakenWhileTheMachineIsBusy) {
  REQUIRE_OPENCL();
  CheckOptions options = fast_options();
  options.device = "cpu";
  options.time = true;
  options.max_contention = -1;  // every window is "disturbed"
  options.timing_attempts = 1;
  std::string error;
  auto checker = Checker::create(silu_mul_op(), options, error);
  ASSERT_TRUE(checker) << error;
  auto first = checker->check(kSiluMulKernel);
  ASSERT_EQ(first.outcome, Outcome::correct) << first.message;
  ASSERT_TRUE(first.baseline && first.baseline->disturbed && first.kernel->disturbed) << first.to_json();
  EXPECT_GT(first.time_eager_ms, 0);
  std::string other = kSiluMulKernel;
  other.replace(other.find("256) block=256"), 14, "128) block=128");  // the same kernel, another program
  auto second = checker->check(other);
  ASSERT_EQ(second.outcome, Outcome::correct) << second.message;
  EXPECT_EQ(second.time_eager_ms, 0) << "the kernel's own window was disturbed: the baseline is not re-taken now";
  EXPECT_DOUBLE_EQ(second.baseline->median_ms, first.baseline->median_ms);
}

}  // namespace
}  // namespace kforge::harness::testing
