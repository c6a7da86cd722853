// Worker main loop behind worker/worker.h.
#include "worker/worker.h"

#include <unistd.h>

#include <chrono>
#include <memory>
#include <thread>

#include "common/log.h"
#include "common/version.h"
#include "db/connection.h"
#include "db/workers.h"

namespace kforge::worker {
namespace {

std::string hostname() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

// Sleeps up to `seconds`, waking early when stop is set.
void sleep_unless_stopped(double seconds, const std::atomic<bool>& stop) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!stop && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

int run_worker(const WorkerOptions& options, const std::atomic<bool>& stop) {
  db::WorkerInfo info{hostname(), static_cast<int>(getpid()), options.device, KFORGE_VERSION, options.slots};
  std::unique_ptr<pqxx::connection> conn;
  int64_t worker_id = -1;
  double backoff = 0.5;
  while (!stop) {
    try {
      if (!conn || !conn->is_open()) {
        conn = db::connect(options.database_url);
        if (worker_id < 0) {
          worker_id = db::worker_register(*conn, info);
          log_info("worker", "registered", {{"worker_id", std::to_string(worker_id)}, {"device", options.device}});
        } else {
          log_info("worker", "reconnected", {{"worker_id", std::to_string(worker_id)}});
        }
      }
      db::worker_heartbeat(*conn, worker_id, "idle");
      backoff = 0.5;
      sleep_unless_stopped(options.heartbeat_seconds, stop);
    } catch (const std::exception& e) {
      // Database down or restarting: drop the connection and retry with backoff.
      log_warn("worker", "database error, reconnecting", {{"error", e.what()}, {"retry_s", std::to_string(backoff)}});
      conn.reset();
      sleep_unless_stopped(backoff, stop);
      backoff = std::min(backoff * 2, 10.0);
    }
  }
  if (conn && worker_id >= 0) {
    try {
      db::worker_stop(*conn, worker_id);
    } catch (const std::exception& e) {
      log_warn("worker", "could not mark worker stopped", {{"error", e.what()}});
    }
  }
  log_info("worker", "stopped", {{"worker_id", std::to_string(worker_id)}});
  return 0;
}

}  // namespace kforge::worker
