// BoundedExecutor (api/executor.h): runs tasks on its threads, refuses beyond the
// queue capacity instead of queueing without bound, drains on stop.
// Run: scripts/test.sh build -R api_executor
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "api/executor.h"

using namespace std::chrono_literals;

TEST(BoundedExecutor, RunsTasksOnItsOwnThreads) {
  kforge::api::BoundedExecutor executor(2, 16);
  std::atomic<int> done{0};
  std::thread::id caller = std::this_thread::get_id();
  std::atomic<bool> ran_elsewhere{true};
  for (int task_idx = 0; task_idx < 10; ++task_idx) {
    ASSERT_TRUE(executor.try_submit([&] {
      if (std::this_thread::get_id() == caller) ran_elsewhere = false;
      ++done;
    }));
  }
  executor.stop();
  EXPECT_EQ(done.load(), 10);
  EXPECT_TRUE(ran_elsewhere.load());
}

TEST(BoundedExecutor, RefusesWhenTheQueueIsFull) {
  kforge::api::BoundedExecutor executor(1, 2);
  std::mutex mutex;
  std::condition_variable cv;
  bool release = false;
  std::atomic<bool> started{false};
  auto blocker = [&] {
    started = true;
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return release; });
  };
  ASSERT_TRUE(executor.try_submit(blocker));  // occupies the only thread
  while (!started) std::this_thread::sleep_for(1ms);
  EXPECT_TRUE(executor.try_submit([] {}));
  EXPECT_TRUE(executor.try_submit([] {}));
  EXPECT_EQ(executor.queued(), 2u);
  EXPECT_EQ(executor.running(), 1u);
  EXPECT_FALSE(executor.try_submit([] {})) << "third waiting task must be refused";
  EXPECT_EQ(executor.rejected(), 1u);
  {
    std::lock_guard lock(mutex);
    release = true;
  }
  cv.notify_all();
  executor.stop();
  EXPECT_EQ(executor.queued(), 0u);
  EXPECT_FALSE(executor.try_submit([] {})) << "a stopped executor takes nothing";
}

TEST(BoundedExecutor, AThrowingTaskDoesNotKillTheThread) {
  kforge::api::BoundedExecutor executor(1, 4);
  std::atomic<int> after{0};
  ASSERT_TRUE(executor.try_submit([] { throw std::runtime_error("boom"); }));
  ASSERT_TRUE(executor.try_submit([&] { ++after; }));
  executor.stop();
  EXPECT_EQ(after.load(), 1);
}
