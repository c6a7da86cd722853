// What each kind of sandboxed child may see and do: its whole environment (nothing of the
// worker's but an explicit list), the paths of its read-only file-system view, device
// nodes, its private /tmp, memory limits, seccomp profile and unprivileged uid; and the
// layer switches (KFORGE_SANDBOX_DISABLE) a host can turn off with a logged reason.
// kforge-jail (jail_main.cpp) applies a policy. Test: ctest -R harness_sandbox.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "worker/harness/seccomp_filter.h"

namespace kforge::harness {

//! The kinds of child that run user or model code.
enum class SandboxKind {
  kernel_cpu,  //!< kforge-sandbox on PoCL (the kernel runs in this process)
  kernel_gpu,  //!< kforge-sandbox on CUDA or a GPU's OpenCL
  python,      //!< the Python runner (Triton candidates, the GPU reference and baselines)
  probe,       //!< kforge-probe (the op's TorchScript on small inputs)
};

//! "kernel_cpu", "kernel_gpu", "python", "probe".
std::string sandbox_kind_name(SandboxKind kind);

//! The isolation layers kforge-jail applies; each can be switched off by name in
//! $KFORGE_SANDBOX_DISABLE ("seccomp,network", or "all"; $KFORGE_SANDBOX=off is "all"),
//! which is logged. The jail still applies the CPU and memory limits before exec.
struct SandboxLayers {
  bool env = true;         //!< empty environment plus the policy's list (off: the worker's minus secrets)
  bool user = true;        //!< run as an unprivileged uid of its own (when the worker is root)
  bool network = true;     //!< a new network namespace (no interface but a down loopback)
  bool filesystem = true;  //!< a private mount namespace: read-only view, private /tmp, synthetic /proc
  bool seccomp = true;     //!< the kind's seccomp allow-list
  bool limits = true;      //!< file-size, process and descriptor limits (CPU, memory and core limits always apply)
};

//! Everything kforge-jail needs to start one child.
struct SandboxPolicy {
  SandboxKind kind = SandboxKind::kernel_cpu;
  bool require = false;                //!< a layer that cannot be applied fails the start ($KFORGE_SANDBOX_REQUIRE=1)
  SandboxLayers layers;
  SeccompMode seccomp_mode = SeccompMode::kill;     //!< $KFORGE_SANDBOX_SECCOMP
  SeccompProfile seccomp_profile = SeccompProfile::broad;  //!< installed by the jail before exec
  std::vector<std::string> env;        //!< the child's whole environment, "NAME=value"
  std::vector<std::string> read_only;  //!< absolute paths visible (read-only) in the view
  std::vector<std::string> devices;    //!< device nodes bound into /dev
  std::vector<std::string> proc;       //!< /proc entries besides the child's own (cpuinfo, driver/nvidia...)
  int64_t tmp_bytes = int64_t{512} << 20;  //!< size of the private, writable /tmp
  int uid = 0;                         //!< the uid (and gid) to run as when the worker is root
  int64_t address_space_bytes = 0;     //!< RLIMIT_AS (0: none; CUDA and libtorch map huge ranges)
  int64_t data_bytes = 0;              //!< RLIMIT_DATA: private writable memory, the memory limit of every child
  int64_t file_bytes = int64_t{64} << 20;  //!< RLIMIT_FSIZE: the largest file (stdout and stderr included)
  int64_t processes = 4096;            //!< RLIMIT_NPROC for the child's uid (threads count)
  int64_t open_files = 1024;           //!< RLIMIT_NOFILE
  double cpu_seconds = 0;              //!< RLIMIT_CPU (0: none)
};

//! The policy for a child of `kind` started as `argv` (the program first; for the Python
//! runner the interpreter, then the script). Reads the layer switches from the environment.
SandboxPolicy make_sandbox_policy(SandboxKind kind, const std::vector<std::string>& argv);

//! JSON form (the jail's argument) and back; false and `error` on bad input.
std::string sandbox_policy_to_json(const SandboxPolicy& policy);
bool sandbox_policy_from_json(const std::string& text, SandboxPolicy& policy, std::string& error);

//! The fd numbers every sandboxed child gets.
constexpr int kArenaInputFd = 3;   //!< the op's inputs (a sealed, read-only memfd)
constexpr int kReplyFd = 4;        //!< replies to the parent (a pipe of its own; never stdout)
constexpr int kArenaOutputFd = 5;  //!< output slots (writable memfd)
//! The GPU gate (a lock; $KFORGE_GPU_GATE_FD when given): a child holds it while it
//! initialises its device and closes it before reading any command, and the parent holds
//! it while it times, so a pre-started child never touches the GPU during a measurement.
constexpr int kGpuGateFd = 6;
constexpr const char* kGpuGateEnv = "KFORGE_GPU_GATE_FD";  //!< set (to kGpuGateFd) only when a gate is passed
//! A child started before its op's arena exists (a pre-started child of a ChildPool,
//! child_pool.h) gets one end of a Unix socket here instead of fds 3 and 5: its "attach"
//! command brings the arena (and the GPU gate) as SCM_RIGHTS descriptors on it, before any
//! candidate code arrives. $KFORGE_ATTACH_FD is set (to kAttachFd) only then.
constexpr int kAttachFd = 7;
constexpr const char* kAttachEnv = "KFORGE_ATTACH_FD";

}  // namespace kforge::harness
