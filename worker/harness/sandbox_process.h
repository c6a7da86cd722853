// A child process under limits (CPU time, address space, wall clock, no core
// dumps) talking over pipes: the isolation under the probe and the kernel sandbox.
// Test: ctest -R 'harness_(probe|checker|adversarial)' (crashes, hangs, limits).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

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

//! A started child: stdin/stdout pipes, stderr captured in memory, killed on destruction.
class SandboxProcess {
 public:
  //! Starts argv[0] (an absolute path) under `limits`. `data_fd` >= 0 is passed to the child as fd 3.
  //! Returns nullptr and sets `error` if the process cannot be started.
  static std::unique_ptr<SandboxProcess> start(const std::vector<std::string>& argv, const SandboxLimits& limits,
                                               int data_fd, std::string& error);
  ~SandboxProcess();
  SandboxProcess(const SandboxProcess&) = delete;
  SandboxProcess& operator=(const SandboxProcess&) = delete;

  //! Writes all of `text` to the child's stdin; false if the child has gone.
  bool write_all(const std::string& text);
  //! Closes the child's stdin (EOF for it).
  void close_stdin();
  //! Reads one '\n'-terminated line from stdout (without the newline) before `deadline`.
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
  //! Process id.
  pid_t pid() const { return pid_; }

 private:
  SandboxProcess() = default;
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;  // a memfd the child writes to
  bool reaped_ = false;
  int status_ = 0;
  std::string buffer_;
};

//! Directory of the running executable (/proc/self/exe), where kforge's helper binaries live.
std::string self_exe_dir();
//! Full path of a helper binary: $KFORGE_BIN_DIR/name, else next to this executable.
std::string helper_binary_path(const std::string& name);
//! `name` itself when it holds a '/', else its full path found on $PATH (else `name`).
std::string resolve_program(const std::string& name);

}  // namespace kforge::harness
