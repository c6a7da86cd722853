// The worker process: registers in the workers table, heartbeats, and (once the
// job queue lands) claims and runs jobs. Survives database restarts.
#pragma once

#include <atomic>
#include <string>

namespace kforge::worker {

//! Settings for one worker process.
struct WorkerOptions {
  std::string database_url;
  std::string device;           //!< description stored in the workers row
  int slots = 1;                //!< concurrent jobs
  double heartbeat_seconds = 5;
};

//! Runs until `stop` becomes true: register, heartbeat, reconnect after a
//! database outage, mark the row stopped on the way out. Returns an exit code.
int run_worker(const WorkerOptions& options, const std::atomic<bool>& stop);

}  // namespace kforge::worker
