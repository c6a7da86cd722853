// The checker's side of one kforge-sandbox child: start it under limits on the shared
// arena, wait for its ready line, and exchange one JSON-line command (build, run, time)
// for one reply, turning a dead, silent or garbled child into an outcome. The protocol is
// sandbox_main.cpp's. Test: ctest -R 'harness_(checker|adversarial)'.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "worker/harness/checker.h"
#include "worker/harness/sandbox_process.h"

namespace kforge::harness {

//! How a Checker starts its children: kforge-sandbox (opencl, cuda) or the Python runner
//! (triton candidates; the GPU reference and baselines), all speaking the same protocol.
struct SandboxLaunch {
  std::vector<std::string> argv;  //!< absolute program path first ("kforge-sandbox --target cuda --device 0")
  SandboxLimits limits;
  int arena_fd = -1;    //!< the memfd arena, fd 3 in the child
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

  //! Sends `command` and waits up to `timeout_s` for its reply line. A child that died,
  //! stayed silent or sent garbage sets result's outcome and message (`what` names the
  //! step) and returns false; so does a stop request (killed, outcome timeout "stopped").
  //! The wait is added to result.child_ms.
  bool exchange(const nlohmann::json& command, double timeout_s, const std::string& what, nlohmann::json& reply,
                CheckResult& result);
  //! Asks the child to exit (it is killed on destruction anyway).
  void quit();

 private:
  std::unique_ptr<SandboxProcess> process_;
  std::function<bool()> stop_requested_;
  bool ready_ = false;
  nlohmann::json device_;
};

//! A fresh child per candidate, the next one always starting in the background, so a
//! candidate never waits for process start-up and OpenCL initialisation.
class SandboxPool {
 public:
  explicit SandboxPool(SandboxLaunch launch) : launch_(std::move(launch)) {}

  //! The pre-started child (or a new one) once ready; starts the next. nullptr and `error` if none starts.
  std::unique_ptr<SandboxChild> take(std::string& error);
  //! Keeps a started child as the next one to hand out.
  void keep(std::unique_ptr<SandboxChild> child) { spare_ = std::move(child); }
  //! Lets the pre-started child finish starting (dropping it if it fails), so it does not
  //! compete with a timed run.
  void settle();
  //! True when a pre-started child is waiting.
  bool has_spare() const { return spare_ != nullptr; }

 private:
  SandboxLaunch launch_;
  std::unique_ptr<SandboxChild> spare_;
};

}  // namespace kforge::harness
