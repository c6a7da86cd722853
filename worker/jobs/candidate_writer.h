// Writes a generation's candidates exactly once per (job, attempt, sample) over the
// job's own connection, reconnecting after a database outage until the job is told to
// stop; only while the job's lease is held, after clearing earlier attempts' rows.
// Test: ctest -R 'jobs_(generate|faults)_test'.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "db/connection.h"
#include "db/ops.h"
#include "worker/worker.h"

namespace kforge::jobs {

//! The candidate write path of one run of a job (one attempt).
class CandidateWriter {
 public:
  CandidateWriter(const std::string& database_url, const worker::JobContext& ctx);

  //! Clears the candidates of the job's earlier attempts. False when the lease is lost,
  //! or the job was told to stop while the database was away.
  bool begin();
  //! Writes one candidate (job id and attempt are the lease's): its id, or nullopt when the
  //! lease is lost or the job was told to stop while the database was away.
  std::optional<int64_t> write(const db::CandidateRecord& record);

 private:
  // Runs `step` on the link; a lost connection is reopened and the step retried with
  // backoff while the job may go on. nullopt when it may not.
  template <typename Step>
  auto retry(const char* what, Step step) -> std::optional<decltype(step(std::declval<pqxx::connection&>()))>;

  db::Link link_;
  const worker::JobContext& ctx_;
  db::JobLease lease_;
};

}  // namespace kforge::jobs
