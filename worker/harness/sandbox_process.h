// A child process under limits (CPU time, memory, wall clock, no core dumps) talking
// over pipes: the isolation under the probe, the kernel sandbox and the Python runner.
// Sandboxed children start through kforge-jail (sandbox_jail.h) with an explicit
// environment; their replies come on a pipe of their own (fd 4), while stdout and stderr
// go to bounded captures that are never parsed as results.
// Test: ctest -R 'harness_(sandbox|probe|checker|adversarial)' (crashes, hangs, limits, escapes).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "worker/harness/sandbox_policy.h"

namespace kforge::harness {

//! Resource limits applied to a sandboxed child.
struct SandboxLimits {
  double cpu_seconds = 30;          //!< RLIMIT_CPU (SIGXCPU past it); 0 = no limit
  int64_t address_space_bytes = 0;  //!< RLIMIT_AS; 0 = no limit (CUDA libraries and contexts need far more address space than memory)
  int64_t data_bytes = 0;           //!< RLIMIT_DATA: private writable memory (heap, buffers); 0 = no limit
  double wall_seconds = 30;         //!< enforced by the caller's deadlines (see read_line)
};

//! How a read from the child ended.
enum class ReadStatus { line, eof, timeout };

//! What to start in a sandbox: the program, its kind (which policy), limits and the arena.
struct SandboxSpawn {
  std::vector<std::string> argv;  //!< absolute program path first
  SandboxKind kind = SandboxKind::kernel_cpu;
  SandboxLimits limits;
  int arena_inputs_fd = -1;   //!< becomes fd 3 (read-only inputs)
  int arena_outputs_fd = -1;  //!< becomes fd 5 (output slots)
  int gpu_gate_fd = -1;       //!< a memfd whose lock is the GPU gate: the child gets its own open of it as fd 6
  //! No arena yet: the child gets a Unix socket as fd 7 (kAttachFd) and receives the arena
  //! later (SandboxProcess::send_fds, the child's "attach" command). The arena fds are ignored.
  bool attach_later = false;
};

//! A started child, killed on destruction.
class SandboxProcess {
 public:
  //! Starts `spawn.argv` in a sandbox: through kforge-jail with the kind's policy (layers
  //! switched off by $KFORGE_SANDBOX=off or _DISABLE; limits always set before exec), an
  //! explicit environment, replies on fd 4, stdout and stderr captured. Returns nullptr and sets `error` if the process cannot be started.
  static std::unique_ptr<SandboxProcess> start_sandboxed(const SandboxSpawn& spawn, std::string& error);
  //! Starts a trusted helper (no jail, the caller's environment) that replies on stdout;
  //! its limits are set with prlimit just after the spawn, so only for programs that run no
  //! untrusted code before a command arrives (device listing, tests, benches).
  //! `data_fd` >= 0 is passed as fd 3.
  static std::unique_ptr<SandboxProcess> start(const std::vector<std::string>& argv, const SandboxLimits& limits,
                                               int data_fd, std::string& error);
  //! Kills the child (SIGKILL) and reaps it in the background: a process that held a GPU
  //! context takes a while to go, and the checker's next candidate need not wait for it.
  ~SandboxProcess();
  SandboxProcess(const SandboxProcess&) = delete;
  SandboxProcess& operator=(const SandboxProcess&) = delete;

  //! Writes all of `text` to the child's stdin; false if the child has gone.
  bool write_all(const std::string& text);
  //! Closes the child's stdin (EOF for it).
  void close_stdin();
  //! Sends `fds` (SCM_RIGHTS) on the attach socket of a child started with attach_later;
  //! false and `error` if there is none or the child has gone.
  bool send_fds(const std::vector<int>& fds, std::string& error);
  //! True once the child has exited (reaped here, without waiting).
  bool exited() { return wait_exit(std::chrono::steady_clock::now()); }
  //! Reads one '\n'-terminated reply line (without the newline) before `deadline`. The
  //! jail's report line is taken aside (jail_report()). A line over 4 MiB is cut to its
  //! start and the channel closed: a flood never grows the buffer or costs a rescan.
  ReadStatus read_line(std::string& line, std::chrono::steady_clock::time_point deadline);
  //! Kills the child (SIGKILL) and reaps it.
  void kill_now();
  //! Waits for exit until `deadline`; true if it exited. Then exit_status() is valid.
  bool wait_exit(std::chrono::steady_clock::time_point deadline);
  //! The raw wait status after wait_exit() returned true.
  int exit_status() const { return status_; }
  //! "exited with status 3", "killed by SIGSEGV (segmentation fault)", "CPU time limit exceeded"...
  std::string describe_exit() const;
  //! True if the child died from SIGXCPU (the CPU-time limit).
  bool cpu_limit_hit() const;
  //! True if the child died from a signal.
  bool signalled() const;
  //! The last `max_bytes` of what the child wrote to stderr.
  std::string stderr_tail(size_t max_bytes = 2000) const;
  //! The last `max_bytes` of what the child wrote to stdout (sandboxed children only).
  std::string stdout_tail(size_t max_bytes = 2000) const;
  //! The jail's report ({"applied": [...], "degraded": [...]}), once read; "" before or unjailed.
  const std::string& jail_report() const { return jail_report_; }
  //! Process id.
  pid_t pid() const { return pid_; }

 private:
  SandboxProcess() = default;
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int reply_fd_ = -1;   // replies: fd 4 of a sandboxed child, stdout of a helper
  int stdout_fd_ = -1;  // a memfd capture (sandboxed children)
  int stderr_fd_ = -1;  // a memfd capture
  int attach_fd_ = -1;  // the parent's end of the attach socket (attach_later children)
  bool reaped_ = false;
  bool expect_jail_report_ = false;
  int status_ = 0;
  std::string buffer_;
  size_t scanned_ = 0;  // buffer_ bytes already searched for a newline
  std::string jail_report_;
};

//! Directory of the running executable (/proc/self/exe), where kforge's helper binaries live.
std::string self_exe_dir();
//! Full path of a helper binary: $KFORGE_BIN_DIR/name, else next to this executable.
std::string helper_binary_path(const std::string& name);
//! `name` itself when it holds a '/', else its full path found on $PATH (else `name`).
std::string resolve_program(const std::string& name);
//! Logs (once per process and text) each layer a jail report says it could not apply.
void log_jail_degradations(const std::string& kind, const std::string& jail_report);

}  // namespace kforge::harness
