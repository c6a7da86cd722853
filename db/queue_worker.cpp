// Worker side of the job queue behind db/queue.h: claim, heartbeat, complete
// (single and batched, with a same-transaction hook), fail with backoff, cancel
// acknowledgement, release and the rescuer. Tests: tests/db/queue_lease_test.cpp.
#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "db/queue.h"
#include "db/queue_sql.h"

namespace kforge::db {
namespace {

// The rescuer and pruner's advisory lock key (any fixed 64-bit value).
constexpr long long kMaintenanceLockKey = 0x6b666f7267650002LL;

std::string text_array(const std::vector<std::string>& values) {
  // Kinds are validated names ([a-z0-9_.-]), so no quoting is needed; refuse others.
  std::string out = "{";
  for (size_t value_idx = 0; value_idx < values.size(); ++value_idx) {
    for (char c : values[value_idx]) {
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
        throw std::invalid_argument("job kind '" + values[value_idx] + "' is invalid");
    }
    if (value_idx) out += ",";
    out += values[value_idx];
  }
  return out + "}";
}

void check_lease_seconds(double lease_seconds) {
  if (!(lease_seconds > 0) || lease_seconds > 86400)
    throw std::invalid_argument("lease_seconds must be in (0, 86400]");
}

}  // namespace

JobLease job_lease(const Job& job) { return {job.id, job.worker_id.value_or(0), job.attempt}; }

std::vector<Job> job_claim(pqxx::connection& conn, const ClaimRequest& request) {
  if (request.limit < 1 || request.limit > 10000)
    throw std::invalid_argument("claim limit " + std::to_string(request.limit) + " is out of range 1..10000");
  check_lease_seconds(request.lease_seconds);
  // One statement is atomic on its own: autocommit saves the BEGIN and COMMIT round trips.
  job_prepare(conn, "job_claim");
  pqxx::nontransaction txn(conn);
  auto rows = txn.exec_prepared("job_claim", request.queue, request.worker_id, request.limit,
                              request.lease_seconds, text_array(request.kinds),
                              capability_array(request.capabilities));
  std::vector<Job> jobs;
  jobs.reserve(rows.size());
  for (const auto& row : rows) jobs.push_back(job_from_row(row));
  // UPDATE ... RETURNING does not keep the CTE's order; restore claim order.
  std::sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) {
    return a.priority != b.priority ? a.priority < b.priority : a.id < b.id;
  });
  return jobs;
}

std::optional<double> job_next_due(pqxx::connection& conn, const std::string& queue,
                                   const std::vector<std::string>& kinds,
                                   const std::vector<std::string>& capabilities) {
  pqxx::read_transaction txn(conn);
  auto row = txn.exec_params1(job_sql("job_next_due"), queue, text_array(kinds), capability_array(capabilities));
  if (row[0].is_null()) return std::nullopt;
  return row[0].as<double>();
}

HeartbeatResult job_heartbeat(pqxx::connection& conn, const JobLease& lease, double lease_seconds,
                              const std::string& progress_json) {
  check_lease_seconds(lease_seconds);
  if (!progress_json.empty() && !nlohmann::json::accept(progress_json))
    throw std::invalid_argument("job progress is not valid JSON");
  job_prepare(conn, "job_heartbeat");
  pqxx::nontransaction txn(conn);
  auto rows = txn.exec_prepared("job_heartbeat", lease.job_id, lease.worker_id, lease.attempt,
                              lease_seconds, progress_json);
  if (rows.empty()) return {false, false};
  return {true, rows[0][0].as<bool>()};
}

std::vector<HeartbeatResult> job_extend_leases(pqxx::connection& conn, int64_t worker_id,
                                               const std::vector<JobLease>& leases, double lease_seconds) {
  check_lease_seconds(lease_seconds);
  std::vector<HeartbeatResult> results(leases.size());
  if (leases.empty()) return results;
  std::vector<int64_t> ids, attempts;
  for (const auto& lease : leases) {
    ids.push_back(lease.job_id);
    attempts.push_back(lease.attempt);
  }
  job_prepare(conn, "job_extend_leases");
  pqxx::nontransaction txn(conn);
  auto rows = txn.exec_prepared("job_extend_leases", worker_id, sql_bigint_array(ids),
                              sql_bigint_array(attempts), lease_seconds);
  std::map<int64_t, bool> held;  // job id -> cancel requested
  for (const auto& row : rows) held[row[0].as<int64_t>()] = row[1].as<bool>();
  for (size_t lease_idx = 0; lease_idx < leases.size(); ++lease_idx) {
    auto found = held.find(leases[lease_idx].job_id);
    if (found != held.end()) results[lease_idx] = {true, found->second};
  }
  return results;
}

bool job_complete(pqxx::connection& conn, const JobLease& lease, const std::string& result_json,
                  const CompleteHook& hook, const std::string& progress_json) {
  if (!nlohmann::json::accept(result_json)) throw std::invalid_argument("job result is not valid JSON");
  if (!progress_json.empty() && !nlohmann::json::accept(progress_json))
    throw std::invalid_argument("job progress is not valid JSON");
  job_prepare(conn, "job_complete");
  if (!hook) {  // a single statement: autocommit
    pqxx::nontransaction txn(conn);
    return !txn.exec_prepared("job_complete", lease.job_id, lease.worker_id, lease.attempt, result_json,
                            progress_json)
                .empty();
  }
  pqxx::work txn(conn);
  auto rows = txn.exec_prepared("job_complete", lease.job_id, lease.worker_id, lease.attempt, result_json,
                              progress_json);
  if (rows.empty()) return false;  // not ours any more: the transaction rolls back, no side effect
  hook(txn);
  txn.commit();
  return true;
}

std::vector<bool> job_complete_many(pqxx::connection& conn, int64_t worker_id,
                                    const std::vector<Completion>& completions) {
  std::vector<bool> completed(completions.size(), false);
  if (completions.empty()) return completed;
  std::string batch = "[";
  for (size_t completion_idx = 0; completion_idx < completions.size(); ++completion_idx) {
    const Completion& completion = completions[completion_idx];
    if (completion.lease.worker_id != worker_id)
      throw std::invalid_argument("job_complete_many: job " + std::to_string(completion.lease.job_id) +
                                  " is leased to another worker");
    if (completion_idx) batch += ",";
    // The result is spliced in as JSON text; check it parses first.
    const std::string& result = completion.result_json.empty() ? std::string("null") : completion.result_json;
    if (!nlohmann::json::accept(result))
      throw std::invalid_argument("job " + std::to_string(completion.lease.job_id) + " result is not valid JSON");
    batch += "{\"id\":" + std::to_string(completion.lease.job_id) +
             ",\"attempt\":" + std::to_string(completion.lease.attempt) + ",\"result\":" + result;
    if (!completion.progress_json.empty()) {
      if (!nlohmann::json::accept(completion.progress_json))
        throw std::invalid_argument("job " + std::to_string(completion.lease.job_id) + " progress is not valid JSON");
      batch += ",\"progress\":" + completion.progress_json;
    }
    batch += "}";
  }
  batch += "]";
  std::vector<int64_t> ids;
  for (const auto& completion : completions) ids.push_back(completion.lease.job_id);
  job_prepare(conn, "job_complete_many");
  pqxx::work txn(conn);
  auto rows = txn.exec_prepared("job_complete_many", worker_id, batch, sql_bigint_array(ids));
  std::set<int64_t> done;
  for (const auto& row : rows) done.insert(row[0].as<int64_t>());
  for (size_t completion_idx = 0; completion_idx < completions.size(); ++completion_idx) {
    const Completion& completion = completions[completion_idx];
    if (!done.count(completion.lease.job_id)) continue;
    completed[completion_idx] = true;
    if (completion.hook) completion.hook(txn);
  }
  txn.commit();
  return completed;
}

FailResult job_fail(pqxx::connection& conn, const JobLease& lease, const std::string& error, bool retryable,
                    const BackoffPolicy& backoff) {
  if (backoff.base_seconds < 0 || backoff.cap_seconds < 0 || backoff.jitter < 0 || backoff.jitter > 1)
    throw std::invalid_argument("backoff: base and cap must be >= 0 and jitter in 0..1");
  pqxx::work txn(conn);
  auto rows = txn.exec_params(job_sql("job_fail"), lease.job_id, lease.worker_id, lease.attempt, error, retryable,
                              backoff.base_seconds, backoff.cap_seconds, backoff.jitter);
  if (rows.empty()) return {};
  FailResult result;
  result.lease_held = true;
  result.state = job_state_from_string(rows[0]["state"].as<std::string>());
  if (result.state == JobState::retryable) {
    result.retry_in_seconds = rows[0]["retry_in_s"].as<double>();
    // Idle workers recompute when the next job is due.
    txn.exec_params(job_sql("job_notify"), rows[0]["queue"].as<std::string>());
  }
  txn.commit();
  return result;
}

bool job_cancelled(pqxx::connection& conn, const JobLease& lease, const std::string& message) {
  pqxx::work txn(conn);
  auto rows = txn.exec_params(job_sql("job_cancelled"), lease.job_id, lease.worker_id, lease.attempt, message);
  txn.commit();
  return !rows.empty();
}

bool job_release(pqxx::connection& conn, const JobLease& lease) {
  pqxx::work txn(conn);
  auto rows = txn.exec_params(job_sql("job_release"), lease.job_id, lease.worker_id, lease.attempt);
  if (!rows.empty()) txn.exec_params(job_sql("job_notify"), rows[0][0].as<std::string>());
  txn.commit();
  return !rows.empty();
}

RescueResult job_rescue(pqxx::connection& conn, const BackoffPolicy& backoff, int limit) {
  RescueResult result;
  pqxx::work txn(conn);
  if (!txn.exec_params1(job_sql("job_try_maintenance_lock"), kMaintenanceLockKey)[0].as<bool>()) return result;
  result.elected = true;
  auto rows = txn.exec_params(job_sql("job_rescue"), limit, backoff.base_seconds, backoff.cap_seconds, backoff.jitter);
  std::set<std::string> queues;
  for (const auto& row : rows) {
    JobState state = job_state_from_string(row["state"].as<std::string>());
    if (state == JobState::retryable) {
      ++result.retried;
      queues.insert(row["queue"].as<std::string>());
    } else if (state == JobState::discarded) {
      ++result.discarded;
    } else {
      ++result.cancelled;
    }
  }
  for (const auto& queue : queues) txn.exec_params(job_sql("job_notify"), queue);
  txn.commit();
  return result;
}

}  // namespace kforge::db
