// The jail kforge-jail builds around a child before exec'ing it: namespaces (mount,
// network, IPC, UTS; a user namespace when the worker is not root), a read-only view
// of the file system with a private /tmp and a synthetic /proc, rlimits, an unprivileged
// uid, and the start-up seccomp filter. Each layer that cannot be applied is reported
// with the kernel's reason. Test: ctest -R harness_sandbox.
#pragma once

#include <string>
#include <vector>

#include "worker/harness/sandbox_policy.h"

namespace kforge::harness {

//! What the jail did: the layers applied and, for each one that was not, why.
struct JailReport {
  std::vector<std::string> applied;   //!< "user 200117", "network", "filesystem", "seccomp broad/kill", "limits"
  std::vector<std::string> degraded;  //!< "network: unshare(CLONE_NEWNET): Operation not permitted"
  //! The JSON line the jail writes on the reply fd before exec: {"jail": {...}}.
  std::string to_json_line() const;
};

//! Applies `policy` to the calling (single-threaded) process. Returns false only when a
//! layer failed and policy.require is set; otherwise degrades and records why.
bool apply_jail(const SandboxPolicy& policy, JailReport& report);

}  // namespace kforge::harness
