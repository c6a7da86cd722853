// SandboxChild and SandboxPool behind sandbox_child.h: every way a child can fail a
// step (write to a dead pipe, no reply in time, EOF, CPU limit, garbage) becomes an
// outcome with a message. Test: ctest -R 'harness_(checker|adversarial)'.
#include "worker/harness/sandbox_child.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>

#include "common/log.h"
#include "worker/harness/child_pool.h"
#include "worker/harness/compare.h"

namespace kforge::harness {
namespace {

using clock_type = std::chrono::steady_clock;
using nlohmann::json;

double ms_since(clock_type::time_point start) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
}

bool fail(CheckResult& result, Outcome outcome, std::string message) {
  result.outcome = outcome;
  result.message = std::move(message);
  return false;
}

}  // namespace

std::unique_ptr<SandboxChild> SandboxChild::start(const SandboxLaunch& launch, std::string& error) {
  auto process = SandboxProcess::start_sandboxed(launch, error);
  if (!process) return nullptr;
  std::unique_ptr<SandboxChild> child(new SandboxChild());
  child->process_ = std::move(process);
  child->launch_kind_ = sandbox_kind_name(launch.kind);
  child->stop_requested_ = launch.stop_requested;
  child->attach_later_ = launch.attach_later;
  return child;
}

bool SandboxChild::begin_attach(int inputs_fd, int outputs_fd, int gate_fd, std::string& error) {
  if (!needs_attach()) {
    error = "the child has its arena already";
    return false;
  }
  std::vector<int> fds = {inputs_fd, outputs_fd};
  // The child's own open of the gate: a lock through a shared open would be ours too.
  int own_gate = gate_fd >= 0 ? ::open(("/proc/self/fd/" + std::to_string(gate_fd)).c_str(), O_RDWR | O_CLOEXEC) : -1;
  if (own_gate >= 0) fds.push_back(own_gate);
  bool sent = process_->send_fds(fds, error);
  if (own_gate >= 0) ::close(own_gate);
  if (!sent) return false;
  attach_sent_ = true;
  if (!process_->write_all("{\"cmd\":\"attach\"}\n")) {
    error = "the child died before its arena was attached: " + process_->describe_exit();
    return false;
  }
  attach_pending_ = true;
  return true;
}

bool SandboxChild::finish_attach(std::string& error) {
  if (!attach_pending_) return true;
  if (!await_ready(error)) return false;
  CheckResult scratch;
  json reply;
  if (!receive(60, "attaching the arena", reply, scratch)) {
    error = scratch.message;
    return false;
  }
  attach_pending_ = false;
  if (!reply.value("ok", false)) {
    error = "attaching the arena: " + reply.value("message", reply.dump());
    return false;
  }
  for (const char* key : {"pinned_inputs", "host_pinning"})
    if (reply.contains(key)) device_[key] = reply[key];
  return true;
}

bool SandboxChild::await_ready(std::string& error) {
  if (ready_) return true;
  std::string line;
  if (process_->read_line(line, clock_type::now() + std::chrono::seconds(120)) != ReadStatus::line) {
    process_->kill_now();
    error = "the sandboxed child did not start: " + process_->describe_exit() + " " + process_->stderr_tail(500) +
            (process_->jail_report().empty() ? "" : " (jail: " + process_->jail_report() + ")");
    return false;
  }
  log_jail_degradations(launch_kind_, process_->jail_report());
  try {
    auto ready = json::parse(line);
    if (!ready.value("ready", false)) {
      error = "kforge-sandbox: " + ready.value("message", line);
      return false;
    }
    device_ = ready["device"];
    log_runner_profile(ready, "starting");
  } catch (const std::exception& e) {
    error = "kforge-sandbox sent an invalid ready line: " + line.substr(0, 200);
    return false;
  }
  ready_ = true;
  return true;
}

bool SandboxChild::exchange(const json& command, double timeout_s, const std::string& what, json& reply,
                            CheckResult& result) {
  return send(command, what, result) && receive(timeout_s, what, reply, result);
}

bool SandboxChild::send(const json& command, const std::string& what, CheckResult& result) {
  SandboxProcess& proc = *process_;
  if (proc.write_all(command.dump(-1, ' ', false, json::error_handler_t::replace) + "\n")) return true;
  proc.wait_exit(clock_type::now() + std::chrono::seconds(2));
  return fail(result, Outcome::runtime_error, what + ": the sandbox process died: " + proc.describe_exit());
}

bool SandboxChild::receive(double timeout_s, const std::string& what, json& reply, CheckResult& result) {
  SandboxProcess& proc = *process_;
  std::string line;
  auto sent = clock_type::now();
  auto deadline = sent + std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  ReadStatus status = ReadStatus::timeout;
  // In 100 ms slices when someone may ask us to stop: a long build or run then ends
  // within a slice of a job's cancel or a worker's shutdown, not at its own deadline.
  for (;;) {
    auto slice = stop_requested_ ? std::min(deadline, clock_type::now() + std::chrono::milliseconds(100)) : deadline;
    status = proc.read_line(line, slice);
    if (status != ReadStatus::timeout || clock_type::now() >= deadline) break;
    if (stop_requested_ && stop_requested_()) {  // read_line may end a few µs before the deadline
      proc.kill_now();
      result.child_ms += ms_since(sent);
      return fail(result, Outcome::timeout, what + " was stopped: the job was asked to stop");
    }
  }
  result.child_ms += ms_since(sent);
  if (status == ReadStatus::timeout) {
    proc.kill_now();
    return fail(result, Outcome::timeout,
                what + " did not finish within " + format_value(timeout_s) +
                    " s (an endless loop, a deadlock, or far too slow)");
  }
  if (status == ReadStatus::eof) {
    proc.wait_exit(clock_type::now() + std::chrono::seconds(5));
    proc.kill_now();
    if (proc.cpu_limit_hit()) return fail(result, Outcome::timeout, what + " exceeded the CPU-time limit (an endless loop?)");
    std::string tail = proc.stderr_tail(400);
    return fail(result, Outcome::runtime_error,
                what + " crashed: " + proc.describe_exit() + (tail.empty() ? "" : ": " + tail));
  }
  try {
    reply = json::parse(line);
  } catch (const std::exception&) {
    return fail(result, Outcome::runtime_error, what + ": the sandbox sent garbage: " + line.substr(0, 200));
  }
  log_runner_profile(reply, what);
  return true;
}

// A runner started with KFORGE_RUNNER_PROFILE (a diagnostic, docs/harness.md) puts where a
// command's time went in its reply: logged with the child's pid, so one child's start, attach,
// build, prepare and runs can be followed across Checkers.
void SandboxChild::log_runner_profile(const json& reply, const std::string& what) const {
  if (!reply.contains("profile")) return;
  log_info("sandbox", "runner profile",
           {{"pid", std::to_string(process_->pid())}, {"what", what}, {"profile", reply["profile"].dump()}});
}

void SandboxChild::quit() { process_->write_all("{\"cmd\":\"quit\"}\n"); }

std::unique_ptr<SandboxChild> SandboxPool::next_child(std::string& error, bool& started_now) {
  started_now = false;
  if (child_pool_) {
    // A warm child of the worker's pool, given this op's arena now: it page-locks it under
    // the gate while the current candidate is checked.
    while (auto pooled = child_pool_->take(launch_)) {
      std::string attach_error;
      pooled->set_stop_requested(launch_.stop_requested);
      if (pooled->begin_attach(launch_.arena_inputs_fd, launch_.arena_outputs_fd, launch_.gpu_gate_fd, attach_error))
        return pooled;
    }
  }
  started_now = true;
  return SandboxChild::start(launch_, error);
}

std::unique_ptr<SandboxChild> SandboxPool::take(std::string& error) {
  // A child started before now (a spare, a pooled child) may have died while it waited
  // (killed, out of memory): then the next one, up to twice. One started just now that
  // fails says why the device cannot be used.
  for (int try_idx = 0; try_idx < 3; ++try_idx) {
    std::unique_ptr<SandboxChild> child;
    bool started_now = false;
    if (!spares_.empty()) {
      child = std::move(spares_.front());
      spares_.pop_front();
    } else {
      child = next_child(error, started_now);
      if (!child) return nullptr;
    }
    while (static_cast<int>(spares_.size()) < depth_) {
      std::string spare_error;
      bool spare_started_now = false;
      auto spare = next_child(spare_error, spare_started_now);
      if (!spare) break;  // the next take() starts one itself and reports why it cannot
      spares_.push_back(std::move(spare));
    }
    if (child->await_ready(error) && child->finish_attach(error)) return child;
    if (started_now) return nullptr;
  }
  return nullptr;
}

void SandboxPool::settle() {
  std::string error;
  for (auto spare = spares_.begin(); spare != spares_.end();)
    spare = (*spare)->await_ready(error) && (*spare)->finish_attach(error) ? std::next(spare) : spares_.erase(spare);
  if (child_pool_) child_pool_->settle();
}

}  // namespace kforge::harness
