// The checker's side of one kforge-sandbox child: start it under limits on the shared
// arena, wait for its ready line, and exchange one JSON-line command (build, run, time)
// for one reply (on the child's reply pipe, never its stdout), turning a dead, silent or
// garbled child into an outcome. The protocol is sandbox_main.cpp's.
// Test: ctest -R 'harness_(checker|adversarial|sandbox)'.
#pragma once

#include <algorithm>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "worker/harness/checker.h"
#include "worker/harness/sandbox_process.h"

namespace kforge::harness {

//! How a Checker starts its children: kforge-sandbox (opencl, cuda) or the Python runner
//! (triton candidates; the GPU reference and baselines), all speaking the same protocol,
//! each through kforge-jail with its kind's policy (sandbox_policy.h).
struct SandboxLaunch : SandboxSpawn {
  std::function<bool()> stop_requested;  //!< CheckOptions::stop_requested: polled while a child works
};

//! One started kforge-sandbox process.
class SandboxChild {
 public:
  //! Starts a child; nullptr and `error` if the process cannot be started.
  static std::unique_ptr<SandboxChild> start(const SandboxLaunch& launch, std::string& error);

  //! Waits (120 s at most: a GPU runner imports torch and triton) for the ready line:
  //! the device chosen and initialised.
  bool await_ready(std::string& error);
  //! The device the ready line described (name, platform, compute_units, max_work_group...).
  const nlohmann::json& device() const { return device_; }
  //! The jail's report: the layers applied and those that could not be ("" when unjailed).
  const std::string& jail_report() const { return process_->jail_report(); }

  //! Sends `command` and waits up to `timeout_s` for its reply line. A child that died,
  //! stayed silent or sent garbage sets result's outcome and message (`what` names the
  //! step) and returns false; so does a stop request (killed, outcome timeout "stopped").
  //! The wait is added to result.child_ms.
  bool exchange(const nlohmann::json& command, double timeout_s, const std::string& what, nlohmann::json& reply,
                CheckResult& result);
  //! exchange() in two halves, so the parent can work while the child does: send() a
  //! command, later receive() its reply (the same failures, named by `what`).
  bool send(const nlohmann::json& command, const std::string& what, CheckResult& result);
  bool receive(double timeout_s, const std::string& what, nlohmann::json& reply, CheckResult& result);
  //! Asks the child to exit (it is killed on destruction anyway).
  void quit();

  //! For a child started with SandboxLaunch::attach_later (a pre-started child of a
  //! ChildPool): sends the op's arena and the child's own open of the GPU gate (`gate_fd`
  //! >= 0: held while it page-locks the arena), then the "attach" command. The reply is read
  //! by finish_attach(), after the replies of any command sent before. False and `error` if
  //! the child has gone.
  bool begin_attach(int inputs_fd, int outputs_fd, int gate_fd, std::string& error);
  //! Waits for the ready line (if not read yet) and the attach reply, whose device facts
  //! (pinned_inputs, host_pinning) join device(). True at once when no attach is pending.
  bool finish_attach(std::string& error);
  //! True if the child was started without an arena and none was sent yet.
  bool needs_attach() const { return attach_later_ && !attach_sent_; }
  //! True while the process runs (a pooled child killed meanwhile is never handed out).
  bool alive() { return !process_->exited(); }
  //! True once the ready line was read (await_ready() succeeded).
  bool ready() const { return ready_; }
  //! Process id (tests kill pooled children with it).
  pid_t pid() const { return process_->pid(); }
  //! The stop check polled while this child works (a pooled child gets its job's on take).
  void set_stop_requested(std::function<bool()> stop_requested) { stop_requested_ = std::move(stop_requested); }

 private:
  void log_runner_profile(const nlohmann::json& reply, const std::string& what) const;
  std::unique_ptr<SandboxProcess> process_;
  std::string launch_kind_;
  std::function<bool()> stop_requested_;
  bool ready_ = false;
  bool attach_later_ = false;
  bool attach_sent_ = false;
  bool attach_pending_ = false;  // sent, reply not read yet
  nlohmann::json device_;
};

class ChildPool;

//! A fresh child per candidate, the next ones always starting in the background, so a
//! candidate never waits for process start-up and device initialisation.
class SandboxPool {
 public:
  explicit SandboxPool(SandboxLaunch launch) : launch_(std::move(launch)) {}
  //! Takes children warm from `pool` (started before the op, attached to this launch's
  //! arena on take) before starting any; null: always starts its own.
  void use_child_pool(std::shared_ptr<ChildPool> pool) { child_pool_ = std::move(pool); }
  //! How many children to keep starting ahead: on a GPU start-up (a CUDA context; torch and
  //! triton imports) takes longer than one candidate's check. 0: none (with a ChildPool on a
  //! CPU, whose warm children replace them and start only between timed runs).
  void set_depth(int depth) { depth_ = std::max(0, depth); }
  //! The oldest pre-started child (or a new one) once ready; tops the spares up to the
  //! depth first. nullptr and `error` if none starts.
  std::unique_ptr<SandboxChild> take(std::string& error);
  //! Keeps a started child as the next one to hand out.
  void keep(std::unique_ptr<SandboxChild> child) { spares_.push_front(std::move(child)); }
  //! Lets the pre-started children finish starting (dropping those that fail), so they
  //! do not compete with a timed run.
  void settle();
  //! True when a pre-started child is waiting.
  bool has_spare() const { return !spares_.empty(); }

 private:
  //! A pooled child attached to this launch's arena, or a new one started with it; nullptr
  //! and `error` if none starts.
  std::unique_ptr<SandboxChild> next_child(std::string& error, bool& started_now);

  SandboxLaunch launch_;
  std::shared_ptr<ChildPool> child_pool_;
  int depth_ = 1;
  std::deque<std::unique_ptr<SandboxChild>> spares_;
};

}  // namespace kforge::harness
