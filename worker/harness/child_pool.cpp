// ChildPool behind child_pool.h: children per launch kind, started attach-later through
// kforge-jail, replaced as they are taken; the process-wide GPU gate.
// Test: ctest -R harness_child_pool.
#include "worker/harness/child_pool.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/log.h"

namespace kforge::harness {

int process_gpu_gate_fd(std::string& error) {
  // Made once and never closed: every Checker and pooled child of this process locks it.
  static const int fd = ::memfd_create("kforge-gpu-gate", MFD_CLOEXEC);
  static const int made_errno = fd < 0 ? errno : 0;
  if (fd < 0) error = std::string("the GPU gate's memfd: ") + std::strerror(made_errno);
  return fd;
}

ChildPool::ChildPool(int depth) : depth_(std::max(1, depth)), spawner_([this] { spawner_loop(); }) {}

ChildPool::~ChildPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  spawner_.join();
  kinds_.clear();  // kills the children while their spawning thread's pool still exists
}

std::string ChildPool::key(const SandboxLaunch& launch) {
  std::string out = sandbox_kind_name(launch.kind);
  for (const auto& arg : launch.argv) out += '\x1f' + arg;
  out += '\x1f' + std::to_string(launch.limits.cpu_seconds) + '\x1f' + std::to_string(launch.limits.data_bytes) +
         '\x1f' + std::to_string(launch.limits.address_space_bytes) + '\x1f' + (launch.gpu_gate_fd >= 0 ? "gate" : "");
  return out;
}

ChildPool::Kind& ChildPool::kind_for(const SandboxLaunch& launch) {
  auto [found, inserted] = kinds_.try_emplace(key(launch));
  if (inserted) {
    Kind& kind = found->second;
    kind.launch = launch;
    kind.launch.attach_later = true;
    kind.launch.arena_inputs_fd = kind.launch.arena_outputs_fd = -1;
    kind.launch.stop_requested = nullptr;  // a pooled child belongs to no job until taken
    std::string ignored;
    if (kind.launch.gpu_gate_fd >= 0) kind.launch.gpu_gate_fd = process_gpu_gate_fd(ignored);
    // The Python runner warms what a cold start would pay on its first command: torch.compile's
    // start-up (reference role), Triton's compiler (candidate role, on a GPU).
    if (kind.launch.kind == SandboxKind::python) kind.launch.argv.push_back("--warm");
  }
  return found->second;
}

void ChildPool::drop_dead(Kind& kind) {
  for (auto child = kind.children.begin(); child != kind.children.end();)
    child = (*child)->alive() ? std::next(child) : kind.children.erase(child);
}

void ChildPool::want_depth(Kind& kind) {
  drop_dead(kind);
  kind.wanted = std::max(0, std::max(depth_, kind.depth) - static_cast<int>(kind.children.size()) - kind.starting);
}

void ChildPool::spawner_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    Kind* wanting = nullptr;
    changed_.wait(lock, [&] {
      if (stopping_) return true;
      for (auto& [name, kind] : kinds_)
        if (kind.wanted > 0) {
          wanting = &kind;
          return true;
        }
      return false;
    });
    if (stopping_) return;
    // Started outside the lock (a spawn takes milliseconds; takes go on meanwhile).
    SandboxLaunch launch = wanting->launch;
    --wanting->wanted;
    ++wanting->starting;
    lock.unlock();
    std::string error;
    auto child = SandboxChild::start(launch, error);
    lock.lock();
    --wanting->starting;  // kinds are never erased: the pointer stays valid
    if (!child) {
      wanting->wanted = 0;  // no retry until the next warm or refill
      log_warn("child_pool", "a pre-started child did not start",
               {{"kind", sandbox_kind_name(launch.kind)}, {"error", error}});
    } else {
      ++started_;
      wanting->children.push_back(std::move(child));
    }
    changed_.notify_all();
  }
}

std::unique_ptr<SandboxChild> ChildPool::take(const SandboxLaunch& launch) {
  std::unique_lock<std::mutex> lock(mutex_);
  Kind& kind = kind_for(launch);
  // A start asked for (warm, refill) and not made yet is a fork and exec away: wait for it
  // rather than have the caller start a child of its own. A worker that claims its first job
  // within milliseconds of warming (a loaded host delays the pool's thread) would otherwise
  // find the pool empty.
  changed_.wait(lock, [&] {
    drop_dead(kind);
    return stopping_ || !kind.children.empty() || (kind.wanted == 0 && kind.starting == 0);
  });
  if (kind.children.empty()) return nullptr;
  std::unique_ptr<SandboxChild> child = std::move(kind.children.front());
  kind.children.pop_front();
  return child;
}

void ChildPool::refill() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [name, kind] : kinds_) want_depth(kind);
  }
  changed_.notify_all();
}

void ChildPool::warm(const SandboxLaunch& launch, int depth) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Kind& kind = kind_for(launch);
    kind.depth = std::max(kind.depth, depth);
    want_depth(kind);
  }
  changed_.notify_all();
}

void ChildPool::settle() {
  // A child that does not become ready (its start outlasted the ready timeout on a loaded
  // host, or it died) is dropped and, once, started again, so a slow start does not leave
  // the pool short; a second failure leaves it short, and says why in the log.
  for (int round = 0; round < 2; ++round) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] {
      for (auto& [name, kind] : kinds_)
        if (kind.wanted > 0 || kind.starting > 0) return false;
      return true;
    });
    int dropped = 0;
    for (auto& [name, kind] : kinds_) {
      std::string error;
      for (auto child = kind.children.begin(); child != kind.children.end();) {
        if ((*child)->await_ready(error)) {
          ++child;
          continue;
        }
        log_warn("child_pool", "a pre-started child never became ready",
                 {{"kind", sandbox_kind_name(kind.launch.kind)}, {"error", error}, {"retried", round > 0 ? "yes" : "no"}});
        child = kind.children.erase(child);
        ++dropped;
      }
    }
    if (dropped == 0 || round > 0) return;
    for (auto& [name, kind] : kinds_) want_depth(kind);
    lock.unlock();
    changed_.notify_all();
  }
}

int ChildPool::size(const SandboxLaunch& launch) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = kinds_.find(key(launch));
  if (found == kinds_.end()) return 0;
  drop_dead(found->second);
  return static_cast<int>(found->second.children.size());
}

std::vector<pid_t> ChildPool::pids(const SandboxLaunch& launch) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<pid_t> out;
  auto found = kinds_.find(key(launch));
  if (found == kinds_.end()) return out;
  for (const auto& child : found->second.children) out.push_back(child->pid());
  return out;
}

}  // namespace kforge::harness
