// The sandbox every untrusted child starts in (kforge-jail: sandbox_jail.h, seccomp_filter.h,
// sandbox_policy.h), tested from outside as an attacker would see it: a kernel's raw
// syscall is killed by the seccomp filter before it runs, the child sees none of the
// worker's environment, cannot write the host's files, see other processes or open an
// internet socket. Run: ctest -R harness_sandbox.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/worker/harness/harness_fixtures.h"
#include "worker/harness/rules.h"
#include "worker/harness/sandbox_child.h"
#include "worker/harness/sandbox_process.h"
#include "worker/harness/seccomp_filter.h"

using namespace kforge::harness;
using nlohmann::json;

namespace {

using clock_type = std::chrono::steady_clock;

std::atomic<int> g_usr1{0};
void on_usr1(int) { ++g_usr1; }

// Sets environment variables for the test's duration (the policy reads them at spawn).
class ScopedEnv {
 public:
  explicit ScopedEnv(std::vector<std::pair<std::string, std::string>> values) : values_(std::move(values)) {
    for (const auto& [name, value] : values_) ::setenv(name.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() {
    for (const auto& [name, value] : values_) ::unsetenv(name.c_str());
  }

 private:
  std::vector<std::pair<std::string, std::string>> values_;
};

// Starts `argv` as a sandboxed child of `kind`, waits for it to end, returns it.
std::unique_ptr<SandboxProcess> run_to_end(const std::vector<std::string>& argv, SandboxKind kind) {
  SandboxSpawn spawn;
  spawn.argv = argv;
  spawn.kind = kind;
  spawn.limits.cpu_seconds = 20;
  std::string error;
  auto child = SandboxProcess::start_sandboxed(spawn, error);
  EXPECT_TRUE(child) << error;
  if (!child) return nullptr;
  child->close_stdin();
  std::string line;
  while (child->read_line(line, clock_type::now() + std::chrono::seconds(30)) == ReadStatus::line) {
  }
  child->wait_exit(clock_type::now() + std::chrono::seconds(30));
  return child;
}

// A kernel that asks the kernel (Linux) to signal the process that started it, with
// raw syscall instructions: getppid (110), then kill(ppid, sig) (62). On x86_64 PoCL
// compiles inline assembly; the static rules reject it, so the test drives kforge-sandbox
// itself, as a kernel that got past the rules would.
const char* kRawSyscallKernel = R"(
__kernel void k(int sig) {
  long ppid;
  __asm__ volatile("syscall" : "=a"(ppid) : "a"(110L) : "rcx", "r11", "memory");
  long rc;
  __asm__ volatile("syscall" : "=a"(rc) : "a"(62L), "D"(ppid), "S"((long)sig) : "rcx", "r11", "memory");
}
)";

// Builds and runs kRawSyscallKernel in a pre-started kforge-sandbox; returns the child's
// last words (the outcome message) and whether it died of SIGSYS.
struct RawSyscallRun {
  std::string message;
  bool built = false;
};

// A one-page arena (inputs and outputs memfds, closed with the object) and the launch of a
// kforge-sandbox kernel_cpu child over it.
struct PageArena {
  int inputs = ::memfd_create("test-inputs", MFD_CLOEXEC), outputs = ::memfd_create("test-outputs", MFD_CLOEXEC);
  const int64_t page = ::sysconf(_SC_PAGESIZE);
  PageArena() {
    EXPECT_EQ(::ftruncate(inputs, page), 0);
    EXPECT_EQ(::ftruncate(outputs, page), 0);
  }
  ~PageArena() {
    ::close(inputs);
    ::close(outputs);
  }
  SandboxLaunch launch() const {
    SandboxLaunch out;
    out.argv = {helper_binary_path("kforge-sandbox")};
    out.kind = SandboxKind::kernel_cpu;
    out.limits.cpu_seconds = 60;
    out.arena_inputs_fd = inputs;
    out.arena_outputs_fd = outputs;
    return out;
  }
};

RawSyscallRun run_raw_syscall_kernel() {
  RawSyscallRun out;
  PageArena arena;
  const int64_t page = arena.page;
  SandboxLaunch launch = arena.launch();
  std::string error;
  auto child = SandboxChild::start(launch, error);
  EXPECT_TRUE(child) << error;
  if (!child || !child->await_ready(error)) {
    out.message = "did not start: " + error;
    return out;
  }
  CheckResult result;
  json reply;
  if (!child->exchange({{"cmd", "build"}, {"source", kRawSyscallKernel}}, 60, "compiling", reply, result) ||
      !reply.value("ok", false)) {
    out.message = "build failed: " + reply.dump() + " " + result.message;
    return out;
  }
  out.built = true;
  LaunchPlan plan;
  PlanLaunch launch_one;
  launch_one.kernel = "k";
  PlanArg sig;
  sig.kind = PlanArg::Kind::i32;
  sig.integer = SIGUSR1;
  launch_one.args = {sig};
  plan.launches = {launch_one};
  json run{{"cmd", "run"},         {"plan", json::parse(launch_plan_to_json(plan))},
           {"inputs", json::array()}, {"outputs", json::array()},
           {"input_region", page},  {"arena_bytes", 2 * page}};
  if (child->exchange(run, 30, "running the kernel", reply, result))
    out.message = "ran: " + reply.dump();
  else
    out.message = result.message;
  return out;
}

}  // namespace

// A pre-started child initialises its device only while it holds the GPU gate (fd 6, the
// checker's memfd), so it never does so inside the checker's timed window: while the
// gate is held here, the child sends no ready line; once let go, it does.
TEST(Sandbox, ChildWaitsForTheGpuGateBeforeItInitialisesItsDevice) {
  int gate = ::memfd_create("test-gate", MFD_CLOEXEC);
  ASSERT_GE(gate, 0);
  PageArena arena;
  // The timed window's own open of the gate: flock locks belong to an open file description.
  int held = ::open(("/proc/self/fd/" + std::to_string(gate)).c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX), 0);
  SandboxLaunch launch = arena.launch();
  launch.gpu_gate_fd = gate;
  std::string error;
  auto child = SandboxChild::start(launch, error);
  ASSERT_TRUE(child) << error;
  const auto started = clock_type::now();
  std::atomic<bool> ready{false};
  std::thread waiter([&] { ready = child->await_ready(error); });
  std::this_thread::sleep_for(std::chrono::seconds(4));  // a PoCL child is ready in ~0.3 s ungated
  EXPECT_FALSE(ready) << "the child initialised its device while the gate was held";
  ::flock(held, LOCK_UN);
  waiter.join();
  EXPECT_TRUE(ready) << error;
  EXPECT_GE(clock_type::now() - started, std::chrono::seconds(4));
  for (int fd : {held, gate}) ::close(fd);
}

TEST(Sandbox, KernelRawSyscallIsKilledByTheFilterNotExecuted) {
  REQUIRE_OPENCL();
#if !defined(__x86_64__)
  GTEST_SKIP() << "the raw-syscall kernel is written for x86_64";
#endif
  struct sigaction action {};
  action.sa_handler = on_usr1;
  ::sigaction(SIGUSR1, &action, nullptr);

  // Control, so the test can fail: with seccomp and the uid change off, the kernel's
  // syscall really reaches this process.
  {
    ScopedEnv off(std::vector<std::pair<std::string, std::string>>{{"KFORGE_SANDBOX_DISABLE", "seccomp,user"}});
    g_usr1 = 0;
    RawSyscallRun control = run_raw_syscall_kernel();
    ASSERT_TRUE(control.built) << control.message;
    for (int wait_idx = 0; wait_idx < 100 && g_usr1 == 0; ++wait_idx)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_EQ(g_usr1.load(), 1) << "without the filter the kernel's kill(getppid(), SIGUSR1) should arrive: "
                                << control.message;
  }

  g_usr1 = 0;
  RawSyscallRun jailed = run_raw_syscall_kernel();
  ASSERT_TRUE(jailed.built) << jailed.message;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(g_usr1.load(), 0) << "the kernel's signal reached the worker: " << jailed.message;
  EXPECT_NE(jailed.message.find("SIGSYS"), std::string::npos) << jailed.message;
  EXPECT_NE(jailed.message.find("seccomp"), std::string::npos) << jailed.message;
  ::signal(SIGUSR1, SIG_DFL);
}

TEST(Sandbox, ChildSeesNoEnvironmentVariableOfTheWorker) {
  ScopedEnv secrets({{"KFORGE_SECRET_SEED", "8675309"},
                     {"KFORGE_DATABASE_URL", "postgresql://kforge:hunter2@db/kforge"},
                     {"KFORGE_SANDBOX_TEST_MARKER", "visible-only-to-the-worker"}});
  auto child = run_to_end({"/usr/bin/env"}, SandboxKind::kernel_cpu);
  ASSERT_TRUE(child);
  std::string env = child->stdout_tail(1 << 20);
  EXPECT_NE(env.find("KFORGE_REPLY_FD=4"), std::string::npos) << env;  // the policy's own list arrived
  for (const char* leaked : {"8675309", "hunter2", "KFORGE_SECRET_SEED", "KFORGE_DATABASE_URL",
                             "KFORGE_SANDBOX_TEST_MARKER", "visible-only-to-the-worker"})
    EXPECT_EQ(env.find(leaked), std::string::npos) << leaked << " reached the child:\n" << env;
  // The child's environment is exactly the policy's list, nothing else of this process.
  SandboxPolicy policy = make_sandbox_policy(SandboxKind::kernel_cpu, {"/usr/bin/env"});
  std::set<std::string> expected(policy.env.begin(), policy.env.end()), seen;
  std::stringstream lines(env);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) seen.insert(line);
  EXPECT_EQ(seen, expected);
}

// A host whose GPU's OpenCL platform is registered through the ICD loader's variables (a
// container's driver outside /etc/OpenCL/vendors) still shows it to a jailed GPU child:
// the variable passes through and the folder it names is in the child's view.
TEST(Sandbox, GpuChildSeesTheIcdFolderTheLoaderIsPointedAt) {
  auto folder = std::filesystem::temp_directory_path() / ("kforge-icd-" + std::to_string(::getpid()));
  std::filesystem::create_directories(folder);
  std::ofstream(folder / "vendor.icd") << "libvendor-opencl.so.1\n";
  ScopedEnv env({{"OCL_ICD_VENDORS", folder.string()}});
  auto child = run_to_end({"/bin/sh", "-c", "echo \"dir=$OCL_ICD_VENDORS\"; cat \"$OCL_ICD_VENDORS/vendor.icd\""},
                          SandboxKind::kernel_gpu);
  ASSERT_TRUE(child);
  std::string out = child->stdout_tail(1 << 16);
  EXPECT_NE(out.find("dir=" + folder.string()), std::string::npos) << out;
  EXPECT_NE(out.find("libvendor-opencl.so.1"), std::string::npos) << "the ICD file is hidden: " << out;
  std::filesystem::remove_all(folder);
}

// The H100 host points the ICD loader at PoCL and NVIDIA through OCL_ICD_FILENAMES: a GPU
// child gets both, a CPU child PoCL alone (it never loads another vendor's library).
TEST(Sandbox, CpuChildIsPointedAtPoclAloneGpuChildAtEveryVendor) {
  ScopedEnv env(std::vector<std::pair<std::string, std::string>>{
      {"OCL_ICD_FILENAMES", "libpocl.so.2:libnvidia-opencl.so.1"}});
  for (auto [kind, expected] : {std::pair{SandboxKind::kernel_cpu, "icd=libpocl.so.2;"},
                                std::pair{SandboxKind::kernel_gpu, "icd=libpocl.so.2:libnvidia-opencl.so.1;"}}) {
    auto child = run_to_end({"/bin/sh", "-c", "echo \"icd=$OCL_ICD_FILENAMES;\""}, kind);
    ASSERT_TRUE(child);
    std::string out = child->stdout_tail(1 << 16);
    EXPECT_NE(out.find(expected), std::string::npos) << out;
  }
}

// The probe links libtorch; on a GPU host pip's torch lives outside the system folders
// (a venv, /opt), and the probe's view must hold the folder the worker loaded it from.
TEST(Sandbox, ProbeSeesTheFoldersOfTheLibrariesTheWorkerLoaded) {
  Dl_info info{};
  ASSERT_NE(::dladdr(reinterpret_cast<void*>(&::cos), &info), 0);
  auto folder = std::filesystem::temp_directory_path() / ("kforge-libs-" + std::to_string(::getpid()));
  std::filesystem::create_directories(folder);
  std::filesystem::copy_file(info.dli_fname, folder / "libkforge_copy.so",
                             std::filesystem::copy_options::overwrite_existing);
  void* handle = ::dlopen((folder / "libkforge_copy.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_TRUE(handle) << ::dlerror();
  auto has = [&](const SandboxPolicy& policy) {
    return std::find(policy.read_only.begin(), policy.read_only.end(), folder.string()) != policy.read_only.end();
  };
  EXPECT_TRUE(has(make_sandbox_policy(SandboxKind::probe, {"/bin/true"})));
  EXPECT_FALSE(has(make_sandbox_policy(SandboxKind::kernel_cpu, {"/bin/true"})))
      << "a kernel's view stays minimal: it links no libtorch";
  ::dlclose(handle);
  std::filesystem::remove_all(folder);
}

TEST(Sandbox, ChildCannotWriteHostFilesOrSeeOtherProcesses) {
  auto marker = std::filesystem::temp_directory_path() / ("kforge-escape-" + std::to_string(::getpid()));
  std::filesystem::remove(marker);
  std::string script = "echo escaped > " + marker.string() + "; echo escaped > /etc/kforge-escape-" +
                       std::to_string(::getpid()) + "; echo inside > /tmp/own && cat /tmp/own; ls /proc; id -u";
  auto child = run_to_end({"/bin/sh", "-c", script}, SandboxKind::python);
  ASSERT_TRUE(child);
  std::string out = child->stdout_tail(1 << 16);
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the child wrote the host's /tmp";
  EXPECT_FALSE(std::filesystem::exists("/etc/kforge-escape-" + std::to_string(::getpid())));
  EXPECT_NE(out.find("inside"), std::string::npos) << "its private /tmp should be writable: " << out;
  // /proc shows the child itself and the few global files of the policy, no other pid.
  EXPECT_EQ(out.find("\n1\n"), std::string::npos) << out;
  EXPECT_EQ(out.find(std::to_string(::getpid()) + "\n"), std::string::npos) << "the worker is visible:\n" << out;
  if (::geteuid() == 0) EXPECT_EQ(out.find("\n0\n"), std::string::npos) << "the child still runs as root:\n" << out;
  std::filesystem::remove(marker);
}

// A program that lives under /tmp (a checkout or build there, as CI's clone may be) still
// runs in the jail: its folder is bound on top of the private /tmp, not hidden beneath it.
TEST(Sandbox, ProgramUnderTmpRunsAndTmpStaysPrivate) {
  char folder[] = "/tmp/kforge-jail-bin-XXXXXX";
  ASSERT_NE(::mkdtemp(folder), nullptr);
  const std::string program = std::string(folder) + "/hello.sh";
  {
    std::ofstream script(program);
    script << "#!/bin/sh\necho ran-from-tmp; echo scratch > /tmp/own && cat /tmp/own; ls /tmp\n";
  }
  std::filesystem::permissions(program, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                                            std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
                                            std::filesystem::perms::others_exec);
  std::filesystem::permissions(folder, std::filesystem::perms::others_read | std::filesystem::perms::others_exec,
                               std::filesystem::perm_options::add);
  auto child = run_to_end({program}, SandboxKind::kernel_cpu);
  ASSERT_TRUE(child);
  std::string out = child->stdout_tail(1 << 16);
  std::filesystem::remove_all(folder);
  EXPECT_NE(out.find("ran-from-tmp"), std::string::npos) << "a program under /tmp did not run in the jail:\n"
                                                         << out << child->stderr_tail(4096);
  EXPECT_NE(out.find("scratch"), std::string::npos) << "the private /tmp should be writable:\n" << out;
}

TEST(Sandbox, InternetSocketIsKilled) {
  const std::string python = "/usr/bin/python3";  // the system's (a pyenv shim needs its home)
  if (::access(python.c_str(), X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  auto child = run_to_end({python, "-c", "import socket; socket.socket(socket.AF_INET, socket.SOCK_STREAM); print('open')"},
                          SandboxKind::python);
  ASSERT_TRUE(child);
  EXPECT_EQ(child->stdout_tail().find("open"), std::string::npos);
  EXPECT_NE(child->describe_exit().find("SIGSYS"), std::string::npos)
      << child->describe_exit() << ": " << child->stderr_tail() << child->stdout_tail();
}

TEST(Sandbox, JailReportsEveryLayer) {
  auto child = run_to_end({"/bin/true"}, SandboxKind::kernel_cpu);
  ASSERT_TRUE(child);
  json report = json::parse(child->jail_report());
  std::string applied = report["applied"].dump();
  for (const char* layer : {"env", "network", "filesystem", "limits", "seccomp broad/kill"})
    EXPECT_NE(applied.find(layer), std::string::npos) << layer << " not applied: " << child->jail_report();
  EXPECT_TRUE(report["degraded"].empty()) << child->jail_report();
}

TEST(Sandbox, FilterProgramsAreValidForEveryProfile) {
  for (auto profile : {SeccompProfile::broad, SeccompProfile::pocl, SeccompProfile::no_exec}) {
    auto program = seccomp_program(profile, SeccompMode::kill, 1234);
    EXPECT_GT(program.size(), 50u) << seccomp_profile_name(profile);
    EXPECT_LT(program.size(), 4096u) << seccomp_profile_name(profile);  // BPF_MAXINSNS
  }
}
