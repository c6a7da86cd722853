// A worker-wide pool of pre-started sandboxed children: Python runners (the GPU reference and
// baselines, Triton candidates) and kforge-sandbox processes, started before their op exists
// (no arena; device initialised, compilers warmed) so that no generation waits for a process
// start. A Checker takes one and attaches its op's arena (SandboxChild::begin_attach); the
// replacement starts when the Checker says its timed work is over (refill), from the pool's own
// thread (a child dies with the thread that started it: PR_SET_PDEATHSIG). Test: ctest -R harness_child_pool.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "worker/harness/sandbox_child.h"

namespace kforge::harness {

//! The GPU gate (sandbox_policy.h) of this process: one lock for every Checker and every
//! pooled child, so a child started for any op initialises its device only while no Checker
//! of this worker times. -1 and `error` if the memfd cannot be made.
int process_gpu_gate_fd(std::string& error);

//! Pre-started children per kind of launch (program, arguments, sandbox kind, limits), each
//! started through kforge-jail exactly as a Checker would start it, but with an attach socket
//! instead of an arena. Thread-safe: a worker's slots share one. Children are started by the
//! pool's own thread, which lives as long as the pool: the jail sets PR_SET_PDEATHSIG, which
//! fires when the *thread* that spawned a child ends, so a child started from a short-lived
//! thread would be killed with it.
class ChildPool {
 public:
  //! Keeps `depth` children (at least 1) of every kind it has been asked for.
  explicit ChildPool(int depth = 2);
  //! Kills the children (they would die with the worker anyway: PR_SET_PDEATHSIG).
  ~ChildPool();
  ChildPool(const ChildPool&) = delete;
  ChildPool& operator=(const ChildPool&) = delete;

  //! The oldest live child started like `launch` (its arena fds are ignored; ready or still
  //! starting: the caller awaits it), or nullptr when there is none: a kind not seen before is
  //! registered, so a later refill() starts its children. A start asked for and not made yet
  //! (warm, refill) is waited for: it takes a fork and exec. A child found dead is dropped, never
  //! handed out. Nothing starts here: a child starting while a CPU kernel is timed would
  //! disturb the measurement, so replacements wait for refill().
  std::unique_ptr<SandboxChild> take(const SandboxLaunch& launch);
  //! Starts (from the pool's thread) what every kind lacks of its depth: a Checker calls it
  //! when a check's timed work is done, so replacements start while it writes and verifies.
  void refill();
  //! Registers `launch`'s kind (if new) and has children started up to the depth (a worker
  //! calls it at start for the kinds its targets need, so even its first generation finds them);
  //! `depth` > 0 keeps at least that many of this kind (a GPU's triton candidates: one per
  //! candidate compiled ahead).
  void warm(const SandboxLaunch& launch, int depth = 0);
  //! Waits until the starts asked for (warm, refill) have been made and every pooled child has
  //! finished starting (dropping those that fail or died, and starting their replacements once
  //! more, logged), so none competes with a timed run on the CPU.
  void settle();
  //! Live children of `launch`'s kind now, ready or still starting.
  int size(const SandboxLaunch& launch);
  //! Process ids of the live children of `launch`'s kind, oldest first (tests kill them).
  std::vector<pid_t> pids(const SandboxLaunch& launch);
  //! Children of every kind started by this pool so far (replacements included).
  int started() const { return started_; }

 private:
  struct Kind {
    SandboxLaunch launch;  // as the pool starts them: attach_later, the process gate, --warm
    std::deque<std::unique_ptr<SandboxChild>> children;
    int wanted = 0;        // starts asked for (warm, refill) and not yet made
    int starting = 0;      // being started by the spawner now
    int depth = 0;         // kept of this kind: the pool's depth, or more (warm)
  };
  static std::string key(const SandboxLaunch& launch);
  Kind& kind_for(const SandboxLaunch& launch);  // under mutex_
  void drop_dead(Kind& kind);                   // under mutex_
  void want_depth(Kind& kind);                  // under mutex_: ask for what it lacks
  void spawner_loop();

  std::mutex mutex_;
  std::condition_variable changed_;  // a start was asked for or made, or stopping
  std::map<std::string, Kind> kinds_;
  int depth_;
  int started_ = 0;
  bool stopping_ = false;
  std::thread spawner_;  // last: it starts once everything above is ready
};

}  // namespace kforge::harness
