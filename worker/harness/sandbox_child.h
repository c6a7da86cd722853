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

 private:
  std::unique_ptr<SandboxProcess> process_;
  std::string launch_kind_;
  std::function<bool()> stop_requested_;
  bool ready_ = false;
  nlohmann::json device_;
};

//! A fresh child per candidate, the next ones always starting in the background, so a
//! candidate never waits for process start-up and device initialisation.
class SandboxPool {
 public:
  explicit SandboxPool(SandboxLaunch launch) : launch_(std::move(launch)) {}
  //! How many children to keep starting ahead (at least 1): on a GPU start-up (a CUDA
  //! context; torch and triton imports) takes longer than one candidate's check.
  void set_depth(int depth) { depth_ = std::max(1, depth); }
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
  SandboxLaunch launch_;
  int depth_ = 1;
  std::deque<std::unique_ptr<SandboxChild>> spares_;
};

}  // namespace kforge::harness
