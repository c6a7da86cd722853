// seccomp-BPF allow-lists for the sandboxed children, written as raw BPF (no libseccomp:
// the GPU hosts build from a bundle without it). A system call that is not on the list
// kills the whole process (SIGSYS) before it runs. Profiles per child kind are in
// docs/harness.md "Sandbox". Test: ctest -R harness_sandbox (a kernel's raw syscall is killed).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kforge::harness {

//! Which system calls a child may make.
enum class SeccompProfile {
  broad,     //!< process start-up, the Python runner and GPU children: no ptrace, mount, bpf, keyctl,
             //!< io_uring, namespaces, module or kexec calls; sockets only AF_UNIX
  pocl,      //!< kforge-sandbox on PoCL after start-up: files, memory, threads, and exec for PoCL's linker
  no_exec,   //!< kforge-probe after start-up: as pocl, without exec or fork
};

//! What happens on a call outside the profile.
enum class SeccompMode {
  kill,  //!< SECCOMP_RET_KILL_PROCESS: the process dies with SIGSYS, the call never runs
  log,   //!< SECCOMP_RET_LOG: the call runs and the kernel logs it (dmesg / audit): to find what a host needs
  off,   //!< no filter
};

//! "broad", "pocl", "no_exec".
std::string seccomp_profile_name(SeccompProfile profile);
//! Parses "kill", "log", "off" (anything else: kill).
SeccompMode seccomp_mode_from_name(const std::string& name);
//! "kill", "log", "off".
std::string seccomp_mode_name(SeccompMode mode);

//! The BPF program for `profile` (8-byte sock_filter instructions). `self_pid` is the
//! process the filter is for: signals and prlimit are allowed to it only (tight profiles).
std::vector<uint64_t> seccomp_program(SeccompProfile profile, SeccompMode mode, int self_pid);

//! Sets no_new_privs and installs the filter on this thread and every thread of the process
//! (TSYNC). False and `error` if the kernel refuses (no seccomp: the caller logs it).
bool install_seccomp(SeccompProfile profile, SeccompMode mode, std::string& error);

//! Installs `profile` in the mode named by $KFORGE_SANDBOX_SECCOMP (kill when unset; "off"
//! skips). What a child calls once its start-up is done. Returns "" or why it failed.
std::string tighten_seccomp_from_env(SeccompProfile profile);

}  // namespace kforge::harness
