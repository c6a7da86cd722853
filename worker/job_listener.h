// LISTEN on its own connection for new jobs (kforge_jobs) and cancellations
// (kforge_job_cancel); reconnects when the connection drops. The worker keeps
// polling meanwhile, so a lost NOTIFY only costs latency, never a stall.
// Tests: ctest -R 'worker_(jobs|cluster)_test' (NOTIFY latency, a database restart).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace kforge::worker {

//! Callbacks run on the listener thread.
struct ListenerCallbacks {
  std::function<void()> wake;                 //!< a job was queued on our queue (or we reconnected)
  std::function<void(int64_t)> cancel;        //!< cancellation requested for this job id
};

//! Listens until `exit` becomes true. Never throws; logs and reconnects with backoff.
void run_job_listener(const std::string& database_url, const std::string& queue, const ListenerCallbacks& callbacks,
                      const std::atomic<bool>& exit);

}  // namespace kforge::worker
