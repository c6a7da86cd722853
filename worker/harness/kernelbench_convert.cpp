// convert_kernelbench behind kernelbench_convert.h: the importer reads the problem on stdin
// and replies with one JSON line on fd 4, inside the jail the Triton runner uses.
#include "worker/harness/kernelbench_convert.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include "worker/harness/sandbox_process.h"

namespace kforge::harness {

KernelBenchConversion convert_kernelbench(const std::string& problem, const std::string& name,
                                          const KernelBenchConvertOptions& options) {
  KernelBenchConversion result;
  auto fail = [&](std::string message, bool internal) {
    result.message = std::move(message);
    result.internal_error = internal;
    return result;
  };
  std::string python = options.python;
  if (python.empty()) {
    const char* configured = std::getenv("KFORGE_IMPORT_PYTHON");
    python = configured && *configured ? configured : "/usr/bin/python3";
  }
  std::string script = options.script.empty() ? helper_binary_path("tools/import_kernelbench.py") : options.script;
  if (access(script.c_str(), R_OK) != 0) return fail("the KernelBench importer is not installed at " + script, true);
  SandboxSpawn spawn;
  spawn.argv = {resolve_program(python), script, "-", "--reply-fd", "4"};
  if (!name.empty()) spawn.argv.insert(spawn.argv.end(), {"--name", name});
  spawn.kind = SandboxKind::python;
  spawn.limits.cpu_seconds = options.cpu_seconds;
  spawn.limits.data_bytes = options.memory_bytes;
  spawn.limits.wall_seconds = options.wall_seconds;
  std::string error;
  auto child = SandboxProcess::start_sandboxed(spawn, error);
  if (!child) return fail("the KernelBench importer did not start: " + error, true);
  child->write_all(problem);
  child->close_stdin();
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(options.wall_seconds * 1000));
  std::string line;
  ReadStatus read = child->read_line(line, deadline);
  if (read == ReadStatus::timeout) {
    child->kill_now();
    return fail("the conversion did not finish within " + std::to_string(static_cast<int>(options.wall_seconds)) +
                    " s (wall clock)",
                false);
  }
  child->wait_exit(std::chrono::steady_clock::now() + std::chrono::seconds(5));
  if (read == ReadStatus::eof || line.empty()) {
    child->kill_now();
    if (child->cpu_limit_hit())
      return fail("the conversion used more than " + std::to_string(static_cast<int>(options.cpu_seconds)) +
                      " s of CPU time",
                  false);
    std::string tail = child->stderr_tail(400);
    return fail("the conversion stopped: " + child->describe_exit() + (tail.empty() ? "" : ": " + tail), false);
  }
  nlohmann::json reply = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!reply.is_object() || !reply.contains("ok")) return fail("the importer replied with invalid JSON", true);
  if (!reply.value("ok", false)) return fail(reply.value("message", "the problem cannot be converted"), false);
  result.ok = true;
  result.op = reply["op"];
  return result;
}

}  // namespace kforge::harness
