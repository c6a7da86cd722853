// The seccomp allow-lists of seccomp_filter.h as raw BPF: check the architecture, then
// one comparison per allowed system call (a few with argument checks: clone flags,
// signal and prlimit targets, socket families), then the default action. A call outside
// the list never runs. Test: ctest -R harness_sandbox.
#include "worker/harness/seccomp_filter.h"

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace kforge::harness {
namespace {

#if defined(__x86_64__)
constexpr uint32_t kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kArch = AUDIT_ARCH_AARCH64;
#else
#error "seccomp_filter.cpp: add this architecture's AUDIT_ARCH"
#endif

// Calls every profile allows: files, memory, threads' synchronisation, signals to
// oneself, time. `#ifdef` keeps the list valid on architectures without the old calls.
const std::vector<int>& common_calls() {
  static const std::vector<int> calls = {
      __NR_read, __NR_write, __NR_readv, __NR_writev, __NR_pread64, __NR_pwrite64, __NR_preadv, __NR_pwritev,
      __NR_preadv2, __NR_pwritev2, __NR_lseek, __NR_close, __NR_dup, __NR_dup3, __NR_fcntl, __NR_fstat,
      __NR_newfstatat, __NR_statx, __NR_statfs, __NR_fstatfs, __NR_faccessat, __NR_openat, __NR_getdents64,
      __NR_readlinkat, __NR_getcwd, __NR_chdir, __NR_fchdir, __NR_mkdirat, __NR_unlinkat, __NR_renameat,
      __NR_renameat2, __NR_fchmod, __NR_fchmodat, __NR_umask, __NR_ftruncate, __NR_fsync, __NR_fdatasync,
      __NR_flock, __NR_fadvise64, __NR_fallocate, __NR_utimensat, __NR_mmap, __NR_munmap, __NR_mprotect,
      __NR_mremap, __NR_madvise, __NR_brk, __NR_msync, __NR_mincore, __NR_membarrier, __NR_futex,
      __NR_set_robust_list, __NR_get_robust_list, __NR_rseq, __NR_set_tid_address, __NR_prctl,
      __NR_rt_sigaction, __NR_rt_sigprocmask, __NR_rt_sigreturn, __NR_rt_sigsuspend, __NR_rt_sigtimedwait,
      __NR_sigaltstack, __NR_restart_syscall, __NR_getpid, __NR_gettid, __NR_getppid, __NR_getuid,
      __NR_geteuid, __NR_getgid, __NR_getegid, __NR_getgroups, __NR_getresuid, __NR_getresgid, __NR_getpgid,
      __NR_getsid, __NR_getrusage, __NR_times, __NR_sysinfo, __NR_uname, __NR_clock_gettime, __NR_clock_getres,
      __NR_clock_nanosleep, __NR_nanosleep, __NR_gettimeofday, __NR_sched_yield, __NR_sched_getaffinity,
      __NR_sched_setaffinity, __NR_sched_getparam, __NR_sched_getscheduler, __NR_sched_get_priority_max,
      __NR_sched_get_priority_min, __NR_getpriority, __NR_ppoll, __NR_pselect6, __NR_pipe2, __NR_eventfd2,
      __NR_epoll_create1, __NR_epoll_ctl, __NR_epoll_pwait, __NR_getrandom, __NR_exit, __NR_exit_group,
      __NR_ioctl, __NR_getcpu, __NR_get_mempolicy, __NR_set_mempolicy, __NR_mbind, __NR_memfd_create,
      __NR_wait4, __NR_waitid, __NR_close_range, __NR_faccessat2, __NR_setrlimit, __NR_getrlimit,
      __NR_seccomp,  // a child narrows its own filter after start-up (filters only ever add restrictions)
#ifdef __NR_arch_prctl
      __NR_arch_prctl,
#endif
#ifdef __NR_open
      __NR_open, __NR_stat, __NR_lstat, __NR_access, __NR_getdents, __NR_readlink, __NR_mkdir, __NR_rmdir,
      __NR_unlink, __NR_rename, __NR_chmod, __NR_dup2, __NR_poll, __NR_select, __NR_pipe, __NR_epoll_wait,
      __NR_time, __NR_getpgrp,
#endif
#ifdef __NR_futex_waitv
      __NR_futex_waitv,
#endif
  };
  return calls;
}

// What the Python runner, GPU drivers and process start-up need on top: processes,
// Unix sockets (the CUDA driver talks to nvidia-persistenced), event and timer fds,
// locked memory (pinned host buffers), file copies.
const std::vector<int>& broad_calls() {
  static const std::vector<int> calls = {
      __NR_execve, __NR_execveat, __NR_connect, __NR_sendto, __NR_recvfrom, __NR_sendmsg, __NR_recvmsg,
      __NR_shutdown, __NR_getsockopt, __NR_setsockopt, __NR_getsockname, __NR_getpeername, __NR_bind,
      __NR_listen, __NR_accept4, __NR_timerfd_create, __NR_timerfd_settime, __NR_timerfd_gettime,
      __NR_signalfd4, __NR_inotify_init1, __NR_inotify_add_watch, __NR_inotify_rm_watch, __NR_mlock,
      __NR_munlock, __NR_mlock2, __NR_mlockall, __NR_munlockall, __NR_sendfile, __NR_copy_file_range,
      __NR_splice, __NR_tee, __NR_setsid, __NR_setpgid, __NR_tkill, __NR_capget, __NR_fchown, __NR_fchownat,
      __NR_symlinkat, __NR_linkat, __NR_getxattr, __NR_lgetxattr, __NR_fgetxattr, __NR_listxattr,
      __NR_llistxattr, __NR_flistxattr, __NR_timer_create, __NR_timer_settime, __NR_timer_gettime,
      __NR_timer_delete, __NR_setitimer, __NR_getitimer, __NR_sched_setscheduler, __NR_sched_setparam,
      __NR_setpriority, __NR_sync_file_range, __NR_rt_sigqueueinfo, __NR_rt_tgsigqueueinfo, __NR_epoll_pwait2,
      __NR_pidfd_open, __NR_pidfd_send_signal, __NR_truncate, __NR_mq_open, __NR_mq_unlink,
#ifdef __NR_fork
      __NR_fork, __NR_vfork, __NR_chown, __NR_lchown, __NR_symlink, __NR_link, __NR_alarm, __NR_pause,
      __NR_accept, __NR_eventfd, __NR_inotify_init, __NR_epoll_create, __NR_creat, __NR_utimes, __NR_futimesat,
#endif
  };
  return calls;
}

constexpr uint32_t kNamespaceFlags = CLONE_NEWNS | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
                                     CLONE_NEWUTS | CLONE_NEWCGROUP;

// One BPF program under construction.
class Program {
 public:
  explicit Program(uint32_t deny) : deny_(deny) {}

  void stmt(uint16_t code, uint32_t k) { code_.push_back({code, 0, 0, k}); }
  void jump(uint16_t code, uint32_t k, uint8_t jt, uint8_t jf) { code_.push_back({code, jt, jf, k}); }
  void load_nr() { stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)); }
  // The low 32 bits of argument `index`: the kernel reads int arguments (pids, families) there.
  void load_arg(int index) { stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args) + 8 * index); }
  void allow() { stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW); }
  void deny() { stmt(BPF_RET | BPF_K, deny_); }

  // `nr` -> allow; the accumulator must hold the call number.
  void allow_call(int nr) {
    jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, 1);
    allow();
  }
  // `nr` -> `block` (which returns on every path); other calls skip it with A = nr intact.
  void on_call(int nr, const std::vector<sock_filter>& block) {
    jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, static_cast<uint8_t>(block.size()));
    code_.insert(code_.end(), block.begin(), block.end());
  }
  sock_filter ret_allow() const { return {BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ALLOW}; }
  sock_filter ret_deny() const { return {BPF_RET | BPF_K, 0, 0, deny_}; }
  const std::vector<sock_filter>& code() const { return code_; }

 private:
  uint32_t deny_;
  std::vector<sock_filter> code_;
};

sock_filter load_arg_insn(int index) {
  return {BPF_LD | BPF_W | BPF_ABS, 0, 0, static_cast<uint32_t>(offsetof(seccomp_data, args) + 8 * index)};
}

// Allowed when argument `index` (low 32 bits) equals one of `values`.
std::vector<sock_filter> arg_in(const Program& p, int index, const std::vector<uint32_t>& values) {
  std::vector<sock_filter> block{load_arg_insn(index)};
  for (size_t value_idx = 0; value_idx < values.size(); ++value_idx) {
    // Jump over the remaining comparisons and the deny to the allow at the end.
    auto to_allow = static_cast<uint8_t>(values.size() - value_idx);
    block.push_back({BPF_JMP | BPF_JEQ | BPF_K, to_allow, 0, values[value_idx]});
  }
  block.push_back(p.ret_deny());
  block.push_back(p.ret_allow());
  return block;
}

// clone: never new namespaces; with `threads_only`, only threads (and vfork-style spawns
// when `vfork_too`), no plain fork.
std::vector<sock_filter> clone_check(const Program& p, bool threads_only, bool vfork_too) {
  std::vector<sock_filter> block{load_arg_insn(0)};
  block.push_back({BPF_JMP | BPF_JSET | BPF_K, 0, 1, kNamespaceFlags});  // any namespace flag: deny
  block.push_back(p.ret_deny());
  if (threads_only) {
    uint32_t permitted = CLONE_THREAD | (vfork_too ? CLONE_VFORK : 0);
    block.push_back({BPF_JMP | BPF_JSET | BPF_K, 1, 0, permitted});
    block.push_back(p.ret_deny());
  }
  block.push_back(p.ret_allow());
  return block;
}

}  // namespace

std::string seccomp_profile_name(SeccompProfile profile) {
  switch (profile) {
    case SeccompProfile::broad: return "broad";
    case SeccompProfile::pocl: return "pocl";
    case SeccompProfile::no_exec: return "no_exec";
  }
  return "?";
}

SeccompMode seccomp_mode_from_name(const std::string& name) {
  if (name == "log") return SeccompMode::log;
  if (name == "off") return SeccompMode::off;
  return SeccompMode::kill;
}

std::string seccomp_mode_name(SeccompMode mode) {
  switch (mode) {
    case SeccompMode::kill: return "kill";
    case SeccompMode::log: return "log";
    case SeccompMode::off: return "off";
  }
  return "?";
}

std::vector<uint64_t> seccomp_program(SeccompProfile profile, SeccompMode mode, int self_pid) {
  Program p(mode == SeccompMode::log ? SECCOMP_RET_LOG : SECCOMP_RET_KILL_PROCESS);
  const bool broad = profile == SeccompProfile::broad;
  // Wrong architecture (a 32-bit int 0x80 entry, for instance): deny.
  p.stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch));
  p.jump(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0);
  p.deny();
  p.load_nr();
#if defined(__x86_64__)
  p.jump(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1);  // the x32 ABI's numbers
  p.deny();
#endif
  for (int nr : common_calls()) p.allow_call(nr);
  if (broad)
    for (int nr : broad_calls()) p.allow_call(nr);
  // clone3 passes its flags in memory, which a filter cannot read: answer ENOSYS and glibc
  // (2.34+) falls back to clone, whose flags are checked below.
  p.on_call(__NR_clone3, {{BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ERRNO | ENOSYS}});
  p.on_call(__NR_clone, clone_check(p, !broad, profile == SeccompProfile::pocl));
  if (profile == SeccompProfile::pocl) {
    p.allow_call(__NR_execve);  // PoCL links each work-group function with /usr/bin/ld
#ifdef __NR_vfork
    p.allow_call(__NR_vfork);
#endif
  }
  if (broad) {
    p.on_call(__NR_kill, {p.ret_allow()});
    p.on_call(__NR_tgkill, {p.ret_allow()});
    p.on_call(__NR_prlimit64, {p.ret_allow()});
    p.on_call(__NR_socket, arg_in(p, 0, {AF_UNIX}));
    p.on_call(__NR_socketpair, arg_in(p, 0, {AF_UNIX}));
  } else {
    // Signals and limits for this process only (kill(0, ...) is its own process group).
    auto self = static_cast<uint32_t>(self_pid);
    p.on_call(__NR_kill, arg_in(p, 0, {self, 0}));
    p.on_call(__NR_tgkill, arg_in(p, 0, {self}));
    p.on_call(__NR_prlimit64, arg_in(p, 0, {self, 0}));
  }
  p.deny();
  std::vector<uint64_t> out;
  for (const sock_filter& insn : p.code()) {
    uint64_t word = 0;
    std::memcpy(&word, &insn, sizeof insn);
    out.push_back(word);
  }
  return out;
}

bool install_seccomp(SeccompProfile profile, SeccompMode mode, std::string& error) {
  if (mode == SeccompMode::off) return true;
  std::vector<uint64_t> words = seccomp_program(profile, mode, static_cast<int>(::getpid()));
  std::vector<sock_filter> insns(words.size());
  std::memcpy(insns.data(), words.data(), words.size() * sizeof(sock_filter));
  sock_fprog program{static_cast<unsigned short>(insns.size()), insns.data()};
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    error = std::string("prctl(PR_SET_NO_NEW_PRIVS): ") + std::strerror(errno);
    return false;
  }
  long rc = ::syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &program);
  if (rc != 0) {
    error = "seccomp(SET_MODE_FILTER, " + seccomp_profile_name(profile) + "): " +
            (rc > 0 ? "thread " + std::to_string(rc) + " could not be synchronised" : std::strerror(errno));
    return false;
  }
  return true;
}

std::string tighten_seccomp_from_env(SeccompProfile profile) {
  const char* configured = std::getenv("KFORGE_SANDBOX_SECCOMP");
  SeccompMode mode = seccomp_mode_from_name(configured ? configured : "kill");
  if (!configured || mode == SeccompMode::off) return "";  // unsandboxed (no jail) or switched off
  std::string error;
  return install_seccomp(profile, mode, error) ? "" : error;
}

}  // namespace kforge::harness
