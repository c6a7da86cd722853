// posix_spawn of kforge-jail (or of a trusted helper): no fork of the threaded,
// libtorch-holding parent; an explicit environment; replies on a pipe of their own,
// stdout and stderr into bounded memfds. Test: ctest -R 'harness_(sandbox|probe|checker|adversarial)'.
#include "worker/harness/sandbox_process.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/log.h"

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
    case SIGXFSZ: return "file size limit exceeded: more than 64 MiB written to stdout, stderr or a file";
    case SIGSYS: return "bad system call: the sandbox's seccomp filter killed it for a forbidden system call";
    default: return "signal";
  }
}


// Duplicates `fd` above the descriptors a child's file actions write, so the dup2 of
// one mapping never clobbers the source of another.
int high_dup(int fd) { return fd < 0 ? -1 : ::fcntl(fd, F_DUPFD_CLOEXEC, 64); }

// posix_spawn (vfork-style in glibc): no page-table copy of a parent holding libtorch and
// large tensors, safe from threaded parents. `fds` maps parent descriptors to child fd
// numbers; everything else is closed in the child.
pid_t spawn_child(const std::vector<std::string>& argv, char* const* envp, const std::vector<std::pair<int, int>>& fds,
                  bool new_session, std::string& error) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<int> highs;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  for (const auto& [parent_fd, child_fd] : fds) {
    highs.push_back(high_dup(parent_fd));
    if (highs.back() >= 0) posix_spawn_file_actions_adddup2(&actions, highs.back(), child_fd);
  }
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  int first_free = 3;
  for (const auto& mapping : fds) first_free = std::max(first_free, mapping.second + 1);
  posix_spawn_file_actions_addclosefrom_np(&actions, first_free);
#endif
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  // A session of its own: kill(0, ...) or a terminal's signals never reach the worker.
  if (new_session) flags |= POSIX_SPAWN_SETSID;
  posix_spawnattr_setflags(&attributes, flags);
  sigset_t no_signals, default_signals;
  sigemptyset(&no_signals);
  sigfillset(&default_signals);
  posix_spawnattr_setsigmask(&attributes, &no_signals);
  posix_spawnattr_setsigdefault(&attributes, &default_signals);
  pid_t pid = -1;
  int spawned = ::posix_spawn(&pid, args[0], &actions, &attributes, args.data(), envp);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  for (int fd : highs)
    if (fd >= 0) ::close(fd);
  if (spawned != 0) {
    error = "posix_spawn " + argv[0] + ": " + std::strerror(spawned);
    return -1;
  }
  return pid;
}

void apply_prlimits(pid_t pid, const SandboxLimits& limits) {
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
}

}  // namespace

std::unique_ptr<SandboxProcess> SandboxProcess::start_sandboxed(const SandboxSpawn& spawn, std::string& error) {
  if (spawn.argv.empty()) {
    error = "SandboxProcess::start_sandboxed: empty argv";
    return nullptr;
  }
  if (::access(spawn.argv[0].c_str(), X_OK) != 0) {
    error = "helper binary " + spawn.argv[0] + " is missing or not executable (build it: cmake --build build)";
    return nullptr;
  }
  SandboxPolicy policy = make_sandbox_policy(spawn.kind, spawn.argv);
  policy.cpu_seconds = spawn.limits.cpu_seconds;
  policy.address_space_bytes = spawn.limits.address_space_bytes;
  policy.data_bytes = spawn.limits.data_bytes;
  // Always through the jail, even with every layer switched off: it sets the limits in
  // the child before exec, so no instruction of the child runs unlimited.
  std::string jail = helper_binary_path("kforge-jail");
  if (::access(jail.c_str(), X_OK) != 0) {
    error = "kforge-jail is missing at " + jail + " (build it: cmake --build build)";
    return nullptr;
  }
  std::vector<std::string> argv = spawn.argv;
  argv.insert(argv.begin(), {jail, sandbox_policy_to_json(policy)});
  int in_pipe[2] = {-1, -1}, reply_pipe[2] = {-1, -1};
  if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(reply_pipe, O_CLOEXEC) != 0) {
    error = std::string("pipe2: ") + std::strerror(errno);
    for (int fd : {in_pipe[0], in_pipe[1], reply_pipe[0], reply_pipe[1]})
      if (fd >= 0) ::close(fd);
    return nullptr;
  }
  int out_fd = ::memfd_create("kforge-child-stdout", MFD_CLOEXEC);
  int err_fd = ::memfd_create("kforge-child-stderr", MFD_CLOEXEC);
  std::vector<char*> envp;
  for (const auto& entry : policy.env) envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);
  std::vector<std::pair<int, int>> fds = {{in_pipe[0], 0},       {out_fd, 1}, {err_fd, 2},
                                          {reply_pipe[1], kReplyFd}};
  int attach[2] = {-1, -1};
  int placeholder = -1;
  if (spawn.attach_later) {
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, attach) != 0) {
      error = std::string("socketpair: ") + std::strerror(errno);
      for (int fd : {in_pipe[0], in_pipe[1], reply_pipe[0], reply_pipe[1], out_fd, err_fd})
        if (fd >= 0) ::close(fd);
      return nullptr;
    }
    fds.push_back({attach[1], kAttachFd});
    // Placeholders hold fds 3 and 5 until the attach puts the arena there: a device driver
    // or library opening files meanwhile must not take those numbers.
    placeholder = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (placeholder >= 0) {
      fds.push_back({placeholder, kArenaInputFd});
      fds.push_back({placeholder, kArenaOutputFd});
    }
    static const std::string attach_env = std::string(kAttachEnv) + "=" + std::to_string(kAttachFd);
    envp.insert(envp.end() - 1, const_cast<char*>(attach_env.c_str()));
  } else {
    if (spawn.arena_inputs_fd >= 0) fds.push_back({spawn.arena_inputs_fd, kArenaInputFd});
    if (spawn.arena_outputs_fd >= 0) fds.push_back({spawn.arena_outputs_fd, kArenaOutputFd});
  }
  // The child's own open of the gate: a lock taken through a shared open would be the
  // parent's lock too and exclude nobody.
  int gate_fd = spawn.gpu_gate_fd >= 0
                    ? ::open(("/proc/self/fd/" + std::to_string(spawn.gpu_gate_fd)).c_str(), O_RDWR | O_CLOEXEC)
                    : -1;
  if (gate_fd >= 0) {
    fds.push_back({gate_fd, kGpuGateFd});
    static const std::string gate_env = std::string(kGpuGateEnv) + "=" + std::to_string(kGpuGateFd);
    envp.insert(envp.end() - 1, const_cast<char*>(gate_env.c_str()));
  }
  pid_t pid = spawn_child(argv, envp.data(), fds, /*new_session=*/true, error);
  if (gate_fd >= 0) ::close(gate_fd);
  if (attach[1] >= 0) ::close(attach[1]);
  if (placeholder >= 0) ::close(placeholder);
  ::close(in_pipe[0]);
  ::close(reply_pipe[1]);
  if (pid < 0) {
    for (int fd : {in_pipe[1], reply_pipe[0], out_fd, err_fd, attach[0]})
      if (fd >= 0) ::close(fd);
    return nullptr;
  }
  std::unique_ptr<SandboxProcess> child(new SandboxProcess());
  child->pid_ = pid;
  child->stdin_fd_ = in_pipe[1];
  child->reply_fd_ = reply_pipe[0];
  child->stdout_fd_ = out_fd;
  child->stderr_fd_ = err_fd;
  child->attach_fd_ = attach[0];
  child->expect_jail_report_ = true;
  return child;
}

bool SandboxProcess::send_fds(const std::vector<int>& fds, std::string& error) {
  if (attach_fd_ < 0) {
    error = "the child was started with its arena, not to attach one later";
    return false;
  }
  char payload = 'A';  // SCM_RIGHTS travels with at least one byte of data
  iovec io{&payload, 1};
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()), 0);
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  message.msg_control = control.data();
  message.msg_controllen = control.size();
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
  std::memcpy(CMSG_DATA(header), fds.data(), sizeof(int) * fds.size());
  ssize_t sent = -1;
  do {
    sent = ::sendmsg(attach_fd_, &message, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent != 1) {
    error = std::string("sending the arena to the child: ") + std::strerror(errno);
    return false;
  }
  close_fd(attach_fd_);  // one attach per child
  return true;
}

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
  int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1};
  if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0) {
    error = std::string("pipe2: ") + std::strerror(errno);
    for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1]})
      if (fd >= 0) ::close(fd);
    return nullptr;
  }
  int err_fd = ::memfd_create("kforge-sandbox-stderr", MFD_CLOEXEC);
  std::vector<std::pair<int, int>> fds = {{in_pipe[0], 0}, {out_pipe[1], 1}, {err_fd, 2}};
  if (data_fd >= 0) fds.push_back({data_fd, 3});
  pid_t pid = spawn_child(argv, environ, fds, /*new_session=*/false, error);
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  if (pid < 0) {
    for (int fd : {in_pipe[1], out_pipe[0], err_fd})
      if (fd >= 0) ::close(fd);
    return nullptr;
  }
  apply_prlimits(pid, limits);
  std::unique_ptr<SandboxProcess> child(new SandboxProcess());
  child->pid_ = pid;
  child->stdin_fd_ = in_pipe[1];
  child->reply_fd_ = out_pipe[0];
  child->stderr_fd_ = err_fd;
  return child;
}

SandboxProcess::~SandboxProcess() {
  if (pid_ > 0 && !reaped_) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) != pid_) {
      std::thread([pid = pid_] {
        int ignored = 0;
        while (::waitpid(pid, &ignored, 0) < 0 && errno == EINTR) {
        }
      }).detach();
    }
  }
  close_fd(stdin_fd_);
  close_fd(reply_fd_);
  close_fd(stdout_fd_);
  close_fd(stderr_fd_);
  close_fd(attach_fd_);
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
  constexpr size_t kMaxLine = size_t{4} << 20;
  for (;;) {
    auto newline = buffer_.find('\n', scanned_);
    if (newline != std::string::npos) {
      line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      scanned_ = 0;
      if (expect_jail_report_) {  // the jail's line comes first, before anything the child says
        expect_jail_report_ = false;
        nlohmann::json report = nlohmann::json::parse(line, nullptr, false);
        if (report.is_object() && report.contains("jail")) {
          jail_report_ = report["jail"].dump();
          continue;
        }
      }
      return ReadStatus::line;
    }
    scanned_ = buffer_.size();
    if (buffer_.size() > kMaxLine) {
      // No reply is this long: the child floods its reply pipe. Stop listening.
      line = buffer_.substr(0, 200) + "... (a reply line over 4 MiB)";
      buffer_.clear();
      scanned_ = 0;
      close_fd(reply_fd_);
      return ReadStatus::line;
    }
    if (reply_fd_ < 0) return ReadStatus::eof;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return ReadStatus::timeout;
    pollfd pfd{reply_fd_, POLLIN, 0};
    int ready = ::poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) return ReadStatus::eof;
    if (ready <= 0) continue;
    char chunk[65536];
    ssize_t n = ::read(reply_fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close_fd(reply_fd_);
      if (!buffer_.empty()) {  // a last line without newline
        line.swap(buffer_);
        buffer_.clear();
        scanned_ = 0;
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

namespace {

std::string memfd_tail(int fd, size_t max_bytes) {
  if (fd < 0) return "";
  off_t size = ::lseek(fd, 0, SEEK_END);
  if (size <= 0) return "";
  off_t from = size > static_cast<off_t>(max_bytes) ? size - static_cast<off_t>(max_bytes) : 0;
  std::string text(static_cast<size_t>(size - from), '\0');
  ssize_t n = ::pread(fd, text.data(), text.size(), from);
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return text;
}

}  // namespace

std::string SandboxProcess::stderr_tail(size_t max_bytes) const { return memfd_tail(stderr_fd_, max_bytes); }
std::string SandboxProcess::stdout_tail(size_t max_bytes) const { return memfd_tail(stdout_fd_, max_bytes); }

void log_jail_degradations(const std::string& kind, const std::string& jail_report) {
  static std::mutex mutex;
  static std::set<std::string> logged;
  nlohmann::json report = nlohmann::json::parse(jail_report, nullptr, false);
  if (!report.is_object() || !report.contains("degraded")) return;
  std::lock_guard<std::mutex> lock(mutex);
  for (const auto& item : report["degraded"]) {
    std::string why = item.is_string() ? item.get<std::string>() : item.dump();
    if (logged.insert(kind + why).second)
      log_warn("sandbox", "a sandbox layer is not applied", {{"child", kind}, {"reason", why}});
  }
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
