// Worker registry: each kforge-worker inserts a row at start, heartbeats it,
// and marks it stopped on a clean exit; one that goes silent is marked dead.
// Test: scripts/test.sh build -R 'worker_registration_test|api_resources_test|db_queue_test'.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <pqxx/pqxx>

namespace kforge::db {

//! What a worker says about itself when it registers.
struct WorkerInfo {
  std::string host;
  int pid = 0;
  std::string device;
  std::string version;
  int slots = 1;
  std::vector<std::string> capabilities;  //!< tags it can run: "target:opencl", "target:triton", "device:gpu"...
};

//! Inserts the workers row; returns its id.
int64_t worker_register(pqxx::connection& conn, const WorkerInfo& info);
//! Refreshes heartbeat_at and the state (idle | busy | stopping).
void worker_heartbeat(pqxx::connection& conn, int64_t worker_id, const std::string& state);
//! Marks the worker stopped.
void worker_stop(pqxx::connection& conn, int64_t worker_id);
//! Marks workers silent for more than `silent_seconds` dead (running_job_ids cleared);
//! returns how many. Run by the elected maintainer (worker keeper) after each rescue.
int64_t worker_mark_dead(pqxx::connection& conn, double silent_seconds);
//! How many live workers (a heartbeat within `alive_seconds`) could run a job requiring `tags`.
int64_t worker_capable_count(pqxx::transaction_base& txn, const std::vector<std::string>& tags,
                             double alive_seconds = 60);

}  // namespace kforge::db
