// The LISTEN loop behind worker/job_listener.h.
// Test: scripts/test.sh build -R 'worker_(jobs|cluster)_test' (NOTIFY latency, a database restart).
#include "worker/job_listener.h"

#include <chrono>
#include <thread>

#include <pqxx/pqxx>

#include "common/log.h"
#include "db/connection.h"
#include "db/queue.h"

namespace kforge::worker {
namespace {

// Forwards one channel's notifications to a callback.
class Receiver : public pqxx::notification_receiver {
 public:
  Receiver(pqxx::connection& conn, const std::string& channel, std::function<void(const std::string&)> on_payload)
      : pqxx::notification_receiver(conn, channel), on_payload_(std::move(on_payload)) {}
  void operator()(const std::string& payload, int) override { on_payload_(payload); }

 private:
  std::function<void(const std::string&)> on_payload_;
};

void sleep_unless(double seconds, const std::atomic<bool>& exit) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!exit && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

}  // namespace

void run_job_listener(const std::string& database_url, const std::string& queue, const ListenerCallbacks& callbacks,
                      const std::atomic<bool>& exit) {
  double backoff = 0.1;
  bool was_down = false;
  while (!exit) {
    try {
      auto conn = db::connect(database_url);
      Receiver jobs(*conn, db::kJobsChannel, [&](const std::string& payload) {
        if (payload == queue) callbacks.wake();
      });
      Receiver cancels(*conn, db::kJobCancelChannel, [&](const std::string& payload) {
        try {
          callbacks.cancel(std::stoll(payload));
        } catch (const std::exception&) {
          log_warn("worker", "ignoring malformed cancel notification", {{"payload", payload}});
        }
      });
      // NOTIFYs sent while we were not listening are gone: claim once to catch up.
      callbacks.wake();
      if (was_down) log_info("worker", "listener reconnected");
      backoff = 0.1;
      was_down = false;
      // A short timeout so `exit` is noticed promptly; notifications return at once.
      while (!exit) conn->await_notification(0, 200000);
      return;
    } catch (const std::exception& e) {
      if (!was_down) log_warn("worker", "listener connection lost, polling meanwhile", {{"error", e.what()}});
      was_down = true;
      sleep_unless(backoff, exit);
      backoff = std::min(backoff * 2, 5.0);
    }
  }
}

}  // namespace kforge::worker
