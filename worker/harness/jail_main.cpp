// kforge-jail: starts one sandboxed child. The harness spawns it (never a shell) as
//   kforge-jail POLICY_JSON PROGRAM [ARGS...]
// with the child's whole environment, stdin, stdout/stderr captures, the arena (fds 3, 5)
// and the reply pipe (fd 4). It applies the policy (sandbox_jail.h), writes one line
// {"jail": {"applied": [...], "degraded": [...]}} on fd 4, and execs PROGRAM.
// Test: ctest -R harness_sandbox.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "worker/harness/sandbox_jail.h"

using namespace kforge::harness;

namespace {

void send(const std::string& line) {
  size_t written = 0;
  while (written < line.size()) {
    ssize_t n = ::write(kReplyFd, line.data() + written, line.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    written += static_cast<size_t>(n);
  }
}

int refuse(const std::string& message) {
  send(nlohmann::json{{"ready", false}, {"status", "internal_error"}, {"message", message}}.dump() + "\n");
  return 125;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return refuse("usage: kforge-jail POLICY_JSON PROGRAM [ARGS...]");
  SandboxPolicy policy;
  std::string error;
  if (!sandbox_policy_from_json(argv[1], policy, error)) return refuse("kforge-jail: " + error);
  JailReport report;
  bool ok = apply_jail(policy, report);
  send(report.to_json_line());
  if (!ok) {
    std::string missing;
    for (const auto& why : report.degraded) missing += (missing.empty() ? "" : "; ") + why;
    return refuse("sandbox layers missing and KFORGE_SANDBOX_REQUIRE=1: " + missing);
  }
  ::execv(argv[2], argv + 2);
  return refuse(std::string("kforge-jail: exec ") + argv[2] + ": " + std::strerror(errno));
}
