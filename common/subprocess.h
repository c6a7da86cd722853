// Child processes for tests, the run script's helpers and the harness sandbox:
// spawn with arguments and extra environment, signal, wait with a deadline.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace kforge {

//! A spawned child process; the destructor kills (SIGKILL) and reaps it if still running.
class Subprocess {
 public:
  //! Starts argv[0] (looked up in PATH) with extra "NAME=value" environment entries.
  //! stdout/stderr go to `log_path` when non-empty, else are inherited.
  static Subprocess spawn(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env = {},
                          const std::string& log_path = "");

  Subprocess() = default;
  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&& other) noexcept;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  ~Subprocess();

  pid_t pid() const { return pid_; }
  bool running();
  void signal(int signo);
  //! Waits up to `timeout`; returns the wait status (as from waitpid) or nullopt on timeout.
  std::optional<int> wait_for(std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

//! Runs a command to completion, capturing stdout+stderr. Returns {exit status, output}.
std::pair<int, std::string> run_command(const std::vector<std::string>& argv);

}  // namespace kforge
