// kforge's own bounded executor: a fixed set of threads and a bounded queue.
// Handlers that touch the database run here, never on cpprestsdk's pool threads;
// when the queue is full try_submit() refuses and the server answers 503.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kforge::api {

class BoundedExecutor {
 public:
  //! Starts `threads` workers; at most `queue_capacity` tasks wait beyond those running.
  BoundedExecutor(size_t threads, size_t queue_capacity);
  ~BoundedExecutor();
  BoundedExecutor(const BoundedExecutor&) = delete;
  BoundedExecutor& operator=(const BoundedExecutor&) = delete;

  //! Queues the task; false (task not run) when the queue is full or stopping.
  bool try_submit(std::function<void()> task);
  //! Tasks waiting (not yet running).
  size_t queued() const;
  //! Tasks running now.
  size_t running() const;
  //! Tasks refused since start (saturation count, for /metrics).
  size_t rejected() const;
  //! Stops accepting, finishes queued tasks, joins the threads.
  void stop();

 private:
  void run_worker();

  size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  std::vector<std::thread> threads_;
  size_t running_ = 0;
  size_t rejected_ = 0;
  bool stopping_ = false;
};

}  // namespace kforge::api
