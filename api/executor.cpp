// Bounded executor behind api/executor.h: a fixed pool of threads and a bounded queue.
// Test: ctest -R api_executor_test.
#include "api/executor.h"

#include <exception>

#include "common/log.h"

namespace kforge::api {

BoundedExecutor::BoundedExecutor(size_t threads, size_t queue_capacity) : capacity_(queue_capacity) {
  if (threads == 0) threads = 1;
  for (size_t thread_idx = 0; thread_idx < threads; ++thread_idx) threads_.emplace_back([this] { run_worker(); });
}

BoundedExecutor::~BoundedExecutor() { stop(); }

bool BoundedExecutor::try_submit(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || tasks_.size() >= capacity_) {
      ++rejected_;
      return false;
    }
    tasks_.push_back(std::move(task));
  }
  wake_.notify_one();
  return true;
}

size_t BoundedExecutor::queued() const {
  std::lock_guard lock(mutex_);
  return tasks_.size();
}

size_t BoundedExecutor::running() const {
  std::lock_guard lock(mutex_);
  return running_;
}

size_t BoundedExecutor::rejected() const {
  std::lock_guard lock(mutex_);
  return rejected_;
}

void BoundedExecutor::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
  threads_.clear();
}

void BoundedExecutor::run_worker() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping and drained
      task = std::move(tasks_.front());
      tasks_.pop_front();
      ++running_;
    }
    try {
      task();
    } catch (const std::exception& e) {
      log_error("executor", "task threw", {{"error", e.what()}});
    } catch (...) {
      log_error("executor", "task threw a non-exception");
    }
    std::lock_guard lock(mutex_);
    --running_;
  }
}

}  // namespace kforge::api
