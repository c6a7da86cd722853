// posix_spawn + prlimit: no fork of the (threaded, libtorch-holding) parent's address
// space, so it is safe and cheap from threaded parents (libtorch, OpenMP, cpprestsdk).
// Test: ctest -R 'harness_(probe|checker|adversarial)' (crashes, hangs, limits).
#include "worker/harness/sandbox_process.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

extern char** environ;

namespace kforge::harness {
namespace {

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

const char* signal_meaning(int signo) {
  switch (signo) {
    case SIGSEGV: return "segmentation fault: an out-of-bounds or invalid memory access";
    case SIGBUS: return "bus error: misaligned or out-of-range memory access";
    case SIGABRT: return "abort";
    case SIGFPE: return "arithmetic exception (integer division by zero?)";
    case SIGILL: return "illegal instruction";
    case SIGKILL: return "killed (time limit, or the system ran out of memory)";
    case SIGXCPU: return "CPU time limit exceeded";
    default: return "signal";
  }
}

}  // namespace

std::unique_ptr<SandboxProcess> SandboxProcess::start(const std::vector<std::string>& argv,
                                                      const SandboxLimits& limits, int data_fd, std::string& error) {
  if (argv.empty()) {
    error = "SandboxProcess::start: empty argv";
    return nullptr;
  }
  if (::access(argv[0].c_str(), X_OK) != 0) {
    error = "helper binary " + argv[0] + " is missing or not executable (build it: cmake --build build)";
    return nullptr;
  }
  int in_pipe[2], out_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0) {
    error = std::string("pipe2: ") + std::strerror(errno);
    return nullptr;
  }
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    error = std::string("pipe2: ") + std::strerror(errno);
    ::close(in_pipe[0]);
    ::close(in_pipe[1]);
    return nullptr;
  }
  int err_fd = ::memfd_create("kforge-sandbox-stderr", MFD_CLOEXEC);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // posix_spawn (vfork-style in glibc) costs no page-table copy, which matters when the
  // parent holds libtorch and large tensors. Limits are applied with prlimit right after
  // the spawn: the child only runs untrusted code after reading a command we send later.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  if (err_fd >= 0) posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
  if (data_fd >= 0) posix_spawn_file_actions_adddup2(&actions, data_fd, 3);  // same number: clears FD_CLOEXEC
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK);
  sigset_t no_signals;
  sigemptyset(&no_signals);
  posix_spawnattr_setsigmask(&attributes, &no_signals);
  pid_t pid = -1;
  int spawned = ::posix_spawn(&pid, args[0], &actions, &attributes, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (spawned != 0) {
    error = "posix_spawn " + argv[0] + ": " + std::strerror(spawned);
    for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1], err_fd})
      if (fd >= 0) ::close(fd);
    return nullptr;
  }
  rlimit cpu{}, as{}, core{0, 0};
  ::prlimit(pid, RLIMIT_CORE, &core, nullptr);
  if (limits.cpu_seconds > 0) {
    cpu.rlim_cur = static_cast<rlim_t>(limits.cpu_seconds + 0.999);
    cpu.rlim_max = cpu.rlim_cur + 2;  // SIGXCPU first, SIGKILL two seconds later
    ::prlimit(pid, RLIMIT_CPU, &cpu, nullptr);
  }
  if (limits.address_space_bytes > 0) {
    as.rlim_cur = as.rlim_max = static_cast<rlim_t>(limits.address_space_bytes);
    ::prlimit(pid, RLIMIT_AS, &as, nullptr);
  }
  if (limits.data_bytes > 0) {
    rlimit data{static_cast<rlim_t>(limits.data_bytes), static_cast<rlim_t>(limits.data_bytes)};
    ::prlimit(pid, RLIMIT_DATA, &data, nullptr);
  }
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  std::unique_ptr<SandboxProcess> child(new SandboxProcess());
  child->pid_ = pid;
  child->stdin_fd_ = in_pipe[1];
  child->stdout_fd_ = out_pipe[0];
  child->stderr_fd_ = err_fd;
  return child;
}

SandboxProcess::~SandboxProcess() {
  kill_now();
  close_fd(stdin_fd_);
  close_fd(stdout_fd_);
  close_fd(stderr_fd_);
}

bool SandboxProcess::write_all(const std::string& text) {
  // A child that died must not kill us with SIGPIPE.
  struct sigaction ignore {}, previous {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &previous);
  size_t written = 0;
  bool ok = stdin_fd_ >= 0;
  while (ok && written < text.size()) {
    ssize_t n = ::write(stdin_fd_, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ok = false;
    else written += static_cast<size_t>(n);
  }
  ::sigaction(SIGPIPE, &previous, nullptr);
  return ok;
}

void SandboxProcess::close_stdin() { close_fd(stdin_fd_); }

ReadStatus SandboxProcess::read_line(std::string& line, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    auto newline = buffer_.find('\n');
    if (newline != std::string::npos) {
      line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      return ReadStatus::line;
    }
    if (stdout_fd_ < 0) return ReadStatus::eof;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return ReadStatus::timeout;
    pollfd pfd{stdout_fd_, POLLIN, 0};
    int ready = ::poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) return ReadStatus::eof;
    if (ready <= 0) continue;
    char chunk[65536];
    ssize_t n = ::read(stdout_fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close_fd(stdout_fd_);
      if (!buffer_.empty()) {  // a last line without newline
        line.swap(buffer_);
        buffer_.clear();
        return ReadStatus::line;
      }
      return ReadStatus::eof;
    }
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

void SandboxProcess::kill_now() {
  if (pid_ <= 0 || reaped_) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  status_ = status;
  reaped_ = true;
}

bool SandboxProcess::wait_exit(std::chrono::steady_clock::time_point deadline) {
  if (reaped_) return true;
  for (;;) {
    int status = 0;
    pid_t got = ::waitpid(pid_, &status, WNOHANG);
    if (got == pid_) {
      status_ = status;
      reaped_ = true;
      return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

bool SandboxProcess::signalled() const { return reaped_ && WIFSIGNALED(status_); }

bool SandboxProcess::cpu_limit_hit() const {
  return reaped_ && WIFSIGNALED(status_) && WTERMSIG(status_) == SIGXCPU;
}

std::string SandboxProcess::describe_exit() const {
  if (!reaped_) return "still running";
  if (WIFEXITED(status_)) return "exited with status " + std::to_string(WEXITSTATUS(status_));
  if (WIFSIGNALED(status_)) {
    int signo = WTERMSIG(status_);
    return std::string("killed by ") + (sigabbrev_np(signo) ? std::string("SIG") + sigabbrev_np(signo) : "signal") +
           " (" + signal_meaning(signo) + ")";
  }
  return "ended with wait status " + std::to_string(status_);
}

std::string SandboxProcess::stderr_tail(size_t max_bytes) const {
  if (stderr_fd_ < 0) return "";
  off_t size = ::lseek(stderr_fd_, 0, SEEK_END);
  if (size <= 0) return "";
  off_t from = size > static_cast<off_t>(max_bytes) ? size - static_cast<off_t>(max_bytes) : 0;
  std::string text(static_cast<size_t>(size - from), '\0');
  ssize_t n = ::pread(stderr_fd_, text.data(), text.size(), from);
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return text;
}

std::string self_exe_dir() {
  char path[4096];
  ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return ".";
  std::string exe(path, static_cast<size_t>(n));
  return exe.substr(0, exe.rfind('/'));
}

std::string helper_binary_path(const std::string& name) {
  if (const char* dir = std::getenv("KFORGE_BIN_DIR"); dir && *dir) return std::string(dir) + "/" + name;
  return self_exe_dir() + "/" + name;
}

std::string resolve_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t begin = 0;
  while (begin <= dirs.size()) {
    size_t end = dirs.find(':', begin);
    if (end == std::string::npos) end = dirs.size();
    std::string candidate = dirs.substr(begin, end - begin) + "/" + name;
    if (end > begin && access(candidate.c_str(), X_OK) == 0) return candidate;
    begin = end + 1;
  }
  return name;
}

}  // namespace kforge::harness
