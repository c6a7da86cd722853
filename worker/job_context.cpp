// JobContext and HandlerRegistry behind worker/worker.h: what a handler sees of
// its job, and the kind -> handler table. Tests: tests/worker/worker_loop_test.cpp.
#include <chrono>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "worker/worker.h"

namespace kforge::worker {

void JobContext::report_progress(const std::string& progress_json) {
  if (!nlohmann::json::accept(progress_json))
    throw std::invalid_argument("job progress must be valid JSON, got: " + progress_json.substr(0, 80));
  std::lock_guard lock(mutex_);
  pending_progress_ = progress_json;
}

bool JobContext::sleep_for(double seconds) const {
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  while (Clock::now() < deadline) {
    if (cancelled()) return false;
    Clock::duration left = deadline - Clock::now();
    std::this_thread::sleep_for(std::min<Clock::duration>(left, std::chrono::milliseconds(10)));
  }
  return !cancelled();
}

void JobContext::on_complete(db::CompleteHook hook) {
  std::lock_guard lock(mutex_);
  hooks_.push_back(std::move(hook));
}

void JobContext::request_stop(StopReason reason) {
  StopReason expected = StopReason::none;
  stop_reason_.compare_exchange_strong(expected, reason);
}

std::string JobContext::take_progress() {
  std::lock_guard lock(mutex_);
  std::string out;
  out.swap(pending_progress_);
  return out;
}

std::vector<db::CompleteHook> JobContext::take_hooks() {
  std::lock_guard lock(mutex_);
  std::vector<db::CompleteHook> out;
  out.swap(hooks_);
  return out;
}

void HandlerRegistry::add(const std::string& kind, JobHandler handler) {
  bool valid = !kind.empty() && kind.size() <= 63 && kind[0] >= 'a' && kind[0] <= 'z';
  for (char c : kind) {
    valid = valid && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-');
  }
  if (!valid) throw std::invalid_argument("job kind '" + kind + "' is invalid: use [a-z][a-z0-9_.-]*");
  if (!handler) throw std::invalid_argument("job kind '" + kind + "' needs a handler");
  handlers_[kind] = std::move(handler);
}

const JobHandler* HandlerRegistry::find(const std::string& kind) const {
  auto found = handlers_.find(kind);
  return found == handlers_.end() ? nullptr : &found->second;
}

std::vector<std::string> HandlerRegistry::kinds() const {
  std::vector<std::string> out;
  for (const auto& [kind, handler] : handlers_) out.push_back(kind);
  return out;
}

HandlerRegistry default_registry() {
  HandlerRegistry registry;
  register_builtin_jobs(registry);
  return registry;
}

}  // namespace kforge::worker
