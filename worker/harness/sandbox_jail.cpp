// apply_jail (sandbox_jail.h), run by kforge-jail in the new child before exec: the
// layers in an order that works both as root (real setuid to an unprivileged uid) and
// as an ordinary user (a user namespace mapping only the worker's own uid).
// Test: ctest -R harness_sandbox.
#include "worker/harness/sandbox_jail.h"

#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

namespace kforge::harness {
namespace {

// struct mount_attr of mount_setattr(2), declared here: older kernel headers lack it.
struct MountAttr {
  uint64_t attr_set, attr_clr, propagation, userns_fd;
};
constexpr uint64_t kMountAttrReadOnly = 0x00000001, kMountAttrNoSuid = 0x00000002;
#ifndef SYS_mount_setattr
constexpr long SYS_mount_setattr = 442;  // the same number on x86_64 and aarch64
#endif

// The view is assembled on a tmpfs mounted over /tmp (in the child's own mount
// namespace), then pivoted into: sources are opened first, since /tmp gets covered.
constexpr const char* kNewRoot = "/tmp";

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

bool write_file(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

bool make_dirs(const std::string& path) {
  for (size_t slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1))
    if (::mkdir(path.substr(0, slash).c_str(), 0755) != 0 && errno != EEXIST) return false;
  return ::mkdir(path.c_str(), 0755) == 0 || errno == EEXIST;
}

// A mount point of the right type at `target` (inside the new root) for `source`.
bool make_mount_point(const std::string& target, bool directory) {
  auto slash = target.rfind('/');
  if (!make_dirs(target.substr(0, slash))) return false;
  if (directory) return ::mkdir(target.c_str(), 0755) == 0 || errno == EEXIST;
  int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

// Read-only and nosuid for the mount at `target` and everything below it.
std::string make_read_only(const std::string& target) {
  MountAttr attr{kMountAttrReadOnly | kMountAttrNoSuid, 0, 0, 0};
  if (::syscall(SYS_mount_setattr, AT_FDCWD, target.c_str(), AT_RECURSIVE, &attr, sizeof attr) == 0) return "";
  if (errno != ENOSYS) return errno_text("mount_setattr(" + target + ")");
  // Before Linux 5.12: only the top mount, keeping the flags a user namespace may not drop.
  struct statvfs vfs {};
  ::statvfs(target.c_str(), &vfs);
  unsigned long keep = (vfs.f_flag & ST_NODEV ? MS_NODEV : 0) | (vfs.f_flag & ST_NOEXEC ? MS_NOEXEC : 0);
  if (::mount(nullptr, target.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | keep, nullptr) != 0)
    return errno_text("remount read-only " + target);
  return "";
}

// One bind source, opened before /tmp is covered by the new root.
struct Source {
  std::string path;
  int fd = -1;
  bool directory = false;
  std::string symlink;  // the link's text when the path itself is a symlink (/lib -> usr/lib)
};

Source open_source(const std::string& path) {
  Source source;
  source.path = path;
  source.fd = ::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (source.fd < 0) return source;
  struct stat st {};
  ::fstat(source.fd, &st);
  if (S_ISLNK(st.st_mode)) {
    char link[4096];
    ssize_t n = ::readlinkat(source.fd, "", link, sizeof link - 1);
    source.symlink = n > 0 ? std::string(link, static_cast<size_t>(n)) : "";
  }
  source.directory = S_ISDIR(st.st_mode);
  return source;
}

std::string bind_mount(const std::string& from, const std::string& to, bool directory, bool read_only) {
  if (!make_mount_point(to, directory)) return errno_text("mount point " + to);
  if (::mount(from.c_str(), to.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) return errno_text("bind " + to);
  return read_only ? make_read_only(to) : "";
}

// The private view: read-only system paths and the policy's, device nodes, a synthetic
// /proc (the child's own /proc/PID and a few global files: no other process is visible),
// a writable tmpfs /tmp; then pivot_root into it and make its root read-only.
std::string build_view(const SandboxPolicy& policy) {
  std::vector<Source> sources;
  for (const auto& path : policy.read_only) {
    Source source = open_source(path);
    if (source.fd >= 0) sources.push_back(source);
  }
  const std::string self = "/proc/" + std::to_string(::getpid());
  std::vector<Source> proc_sources{open_source(self)};
  for (const auto& entry : policy.proc) {
    Source source = open_source("/proc/" + entry);
    if (source.fd >= 0) proc_sources.push_back(source);
  }
  auto close_all = [&] {
    for (auto* list : {&sources, &proc_sources})
      for (auto& source : *list)
        if (source.fd >= 0) ::close(source.fd);
  };
  auto fail = [&](const std::string& why) {
    close_all();
    return why;
  };
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return fail(errno_text("make / private"));
  if (::mount("kforge-root", kNewRoot, "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,mode=0755") != 0)
    return fail(errno_text("tmpfs root"));
  const std::string root = kNewRoot;
  auto fd_path = [](const Source& source) { return "/proc/self/fd/" + std::to_string(source.fd); };
  // The private /tmp first: a read-only source that lives under /tmp (a build or a checkout
  // there, as CI's clone is) is then bound on top of it, not hidden beneath it.
  std::string tmp_options = "size=" + std::to_string(policy.tmp_bytes) + ",mode=1777";
  if (!make_dirs(root + "/tmp") ||
      ::mount("kforge-tmp", (root + "/tmp").c_str(), "tmpfs", MS_NOSUID | MS_NODEV, tmp_options.c_str()) != 0)
    return fail(errno_text("tmpfs /tmp"));
  for (const auto& source : sources) {
    std::string target = root + source.path;
    if (!source.symlink.empty()) {
      if (!make_dirs(target.substr(0, target.rfind('/'))) || ::symlink(source.symlink.c_str(), target.c_str()) != 0)
        return fail(errno_text("symlink " + source.path));
      continue;
    }
    if (auto why = bind_mount(fd_path(source), target, source.directory, true); !why.empty()) return fail(why);
  }
  for (const auto& device : policy.devices) {
    struct stat st {};
    if (::stat(device.c_str(), &st) != 0) continue;
    if (auto why = bind_mount(device, root + device, S_ISDIR(st.st_mode), false); !why.empty()) return fail(why);
  }
  for (const auto& [link, target] : std::vector<std::pair<std::string, std::string>>{
           {"/dev/fd", "/proc/self/fd"}, {"/dev/stdin", "/proc/self/fd/0"}, {"/dev/stdout", "/proc/self/fd/1"},
           {"/dev/stderr", "/proc/self/fd/2"}})
    if (!make_dirs(root + "/dev") || ::symlink(target.c_str(), (root + link).c_str()) != 0)
      return fail(errno_text("symlink " + link));
  if (!make_dirs(root + "/dev/shm") ||
      ::mount("kforge-shm", (root + "/dev/shm").c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777") != 0)
    return fail(errno_text("tmpfs /dev/shm"));
  // /proc: this process's own directory (also as /proc/self) and the global files listed.
  if (auto why = bind_mount(fd_path(proc_sources[0]), root + self, true, false); !why.empty()) return fail(why);
  if (auto why = bind_mount(fd_path(proc_sources[0]), root + "/proc/self", true, false); !why.empty()) return fail(why);
  for (size_t entry_idx = 1; entry_idx < proc_sources.size(); ++entry_idx) {
    const Source& source = proc_sources[entry_idx];
    if (auto why = bind_mount(fd_path(source), root + source.path, source.directory, true); !why.empty()) return fail(why);
  }
  close_all();
  if (::chdir(kNewRoot) != 0) return errno_text("chdir new root");
  if (::syscall(SYS_pivot_root, ".", ".") != 0) return errno_text("pivot_root");
  if (::umount2(".", MNT_DETACH) != 0) return errno_text("detach the old root");
  if (::chdir("/") != 0) return errno_text("chdir /");
  if (::mount(nullptr, "/", nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr) != 0)
    return errno_text("remount / read-only");
  return "";
}

// Enters new namespaces, one group at a time so a refused one costs only itself. As an
// ordinary user each first entry comes with a user namespace mapping the own uid.
struct Namespaces {
  bool mount = false, network = false, user = false;
};

Namespaces enter_namespaces(const SandboxPolicy& policy, JailReport& report) {
  Namespaces entered;
  const bool root = ::geteuid() == 0;
  const uid_t uid = ::getuid();
  const gid_t gid = ::getgid();
  auto enter = [&](int flags, const std::string& layer) {
    int extra = !root && !entered.user ? CLONE_NEWUSER : 0;
    if (::unshare(flags | extra) != 0) {
      report.degraded.push_back(layer + ": " + errno_text("unshare") +
                                (root ? "" : " (user namespaces may be disabled: sysctl user.max_user_namespaces, "
                                             "kernel.apparmor_restrict_unprivileged_userns)"));
      return false;
    }
    if (extra) {
      entered.user = true;
      write_file("/proc/self/setgroups", "deny");
      write_file("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1");
      write_file("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1");
    }
    return true;
  };
  if (policy.layers.network) entered.network = enter(CLONE_NEWNET, "network");
  if (policy.layers.filesystem) entered.mount = enter(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS, "filesystem");
  if (entered.mount) ::sethostname("kforge-sandbox", 14);
  return entered;
}

std::string set_limit(int resource, const char* name, int64_t soft, int64_t hard) {
  rlimit limit{static_cast<rlim_t>(soft), static_cast<rlim_t>(hard)};
  return ::setrlimit(resource, &limit) == 0 ? "" : errno_text(std::string("setrlimit ") + name);
}

void apply_limits(const SandboxPolicy& policy, JailReport& report) {
  // Always, whatever the layers: no core dumps, the CPU limit (SIGXCPU, then SIGKILL two
  // seconds later) and the memory limits, set here before exec (no window in which the
  // child runs unlimited, as a prlimit after the spawn would leave).
  std::string errors;
  auto add = [&](const std::string& why) { errors += why.empty() ? "" : (errors.empty() ? "" : "; ") + why; };
  add(set_limit(RLIMIT_CORE, "CORE", 0, 0));
  if (policy.cpu_seconds > 0) {
    auto seconds = static_cast<int64_t>(policy.cpu_seconds + 0.999);
    add(set_limit(RLIMIT_CPU, "CPU", seconds, seconds + 2));
  }
  if (policy.address_space_bytes > 0)
    add(set_limit(RLIMIT_AS, "AS", policy.address_space_bytes, policy.address_space_bytes));
  if (policy.data_bytes > 0) add(set_limit(RLIMIT_DATA, "DATA", policy.data_bytes, policy.data_bytes));
  if (policy.layers.limits) {
    if (policy.file_bytes > 0) add(set_limit(RLIMIT_FSIZE, "FSIZE", policy.file_bytes, policy.file_bytes));
    if (policy.open_files > 0) add(set_limit(RLIMIT_NOFILE, "NOFILE", policy.open_files, policy.open_files));
    // Per uid: only meaningful for a uid of the child's own (the root path).
    if (policy.processes > 0 && ::geteuid() == 0 && policy.layers.user)
      add(set_limit(RLIMIT_NPROC, "NPROC", policy.processes, policy.processes));
  }
  if (errors.empty()) report.applied.push_back("limits");
  else report.degraded.push_back("limits: " + errors);
}

void drop_privileges(const SandboxPolicy& policy, JailReport& report) {
  if (::geteuid() != 0) {
    report.applied.push_back("user " + std::to_string(::getuid()) + " (not root: the worker's own uid)");
    return;
  }
  if (!policy.layers.user) return;
  auto id = static_cast<uid_t>(policy.uid);
  if (::setgroups(0, nullptr) != 0 || ::setresgid(id, id, id) != 0 || ::setresuid(id, id, id) != 0) {
    report.degraded.push_back("user: " + errno_text("setresuid(" + std::to_string(id) + ")"));
    return;
  }
  report.applied.push_back("user " + std::to_string(id));
}

}  // namespace

std::string JailReport::to_json_line() const {
  return nlohmann::json{{"jail", {{"applied", applied}, {"degraded", degraded}}}}.dump() + "\n";
}

bool apply_jail(const SandboxPolicy& policy, JailReport& report) {
  // Nothing but the standard descriptors, the arena, the reply pipe, the GPU gate and the
  // attach socket (fds 0-7, sandbox_policy.h).
  if (::syscall(SYS_close_range, 8u, ~0u, 0) != 0)
    for (int fd = 8; fd < 4096; ++fd) ::close(fd);
  for (const auto& [on, name] : std::vector<std::pair<bool, std::string>>{
           {policy.layers.env, "env"}, {policy.layers.user, "user"}, {policy.layers.network, "network"},
           {policy.layers.filesystem, "filesystem"}, {policy.layers.seccomp, "seccomp"},
           {policy.layers.limits, "limits"}})
    if (!on) report.degraded.push_back(name + ": switched off by KFORGE_SANDBOX_DISABLE or KFORGE_SANDBOX=off");
  if (policy.layers.env) report.applied.push_back("env");
  Namespaces entered = enter_namespaces(policy, report);
  if (entered.network) report.applied.push_back("network");
  if (entered.mount) {
    std::string why = build_view(policy);
    if (why.empty()) report.applied.push_back("filesystem");
    else report.degraded.push_back("filesystem: " + why);
  }
  apply_limits(policy, report);
  drop_privileges(policy, report);
  // Credential changes clear the parent-death signal: set it again.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (policy.layers.seccomp) {
    std::string error;
    if (install_seccomp(policy.seccomp_profile, policy.seccomp_mode, error))
      report.applied.push_back("seccomp " + seccomp_profile_name(policy.seccomp_profile) + "/" +
                               seccomp_mode_name(policy.seccomp_mode));
    else
      report.degraded.push_back("seccomp: " + error);
  }
  bool switched_off_only = true;
  for (const auto& why : report.degraded)
    switched_off_only = switched_off_only && why.find("switched off by") != std::string::npos;
  return !policy.require || report.degraded.empty() || switched_off_only;
}

}  // namespace kforge::harness
