// Server side of the job queue behind db/queue.h: insert (single, batched,
// idempotent), get, list, cancel, pause/resume, prune.
// Tests: tests/db/queue_test.cpp (scripts/test.sh build -R queue).
#include "db/queue.h"

#include <map>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "db/queue_sql.h"

namespace kforge::db {
namespace {

constexpr const char* kStateNames[] = {"available", "scheduled", "running",   "retryable",
                                       "completed", "failed",    "cancelled", "discarded"};

// The same rule as the CHECK in 002_jobs.sql, checked here for a clear message.
bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > 63 || name[0] < 'a' || name[0] > 'z') return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

void validate(const JobInsert& job) {
  if (!valid_name(job.kind))
    throw std::invalid_argument("job kind '" + job.kind + "' is invalid: use [a-z][a-z0-9_.-]*, at most 63 chars");
  if (!valid_name(job.queue))
    throw std::invalid_argument("job queue '" + job.queue + "' is invalid: use [a-z][a-z0-9_.-]*, at most 63 chars");
  if (job.priority < 0 || job.priority > 9)
    throw std::invalid_argument("job priority " + std::to_string(job.priority) + " is out of range 0..9");
  if (job.max_attempts < 1 || job.max_attempts > 1000)
    throw std::invalid_argument("job max_attempts " + std::to_string(job.max_attempts) + " is out of range 1..1000");
  if (!(job.delay_seconds >= 0) || job.delay_seconds > 10 * 365 * 86400.0)
    throw std::invalid_argument("job delay_seconds must be between 0 and ten years");
  if (job.idempotency_key.size() > 255) throw std::invalid_argument("job idempotency_key is longer than 255 chars");
  if (!nlohmann::json::accept(job.args_json)) throw std::invalid_argument("job args_json is not valid JSON");
}

}  // namespace

std::string to_string(JobState state) { return kStateNames[static_cast<int>(state)]; }

JobState job_state_from_string(const std::string& name) {
  for (int state_idx = 0; state_idx < 8; ++state_idx) {
    if (name == kStateNames[state_idx]) return static_cast<JobState>(state_idx);
  }
  throw std::invalid_argument("unknown job state '" + name +
                              "' (expected available, scheduled, running, retryable, completed, failed, "
                              "cancelled or discarded)");
}

bool job_state_is_terminal(JobState state) {
  return state == JobState::completed || state == JobState::failed || state == JobState::cancelled ||
         state == JobState::discarded;
}

std::string to_string(CancelResult result) {
  switch (result) {
    case CancelResult::cancelled: return "cancelled";
    case CancelResult::cancel_requested: return "cancel_requested";
    case CancelResult::already_finished: return "already_finished";
    case CancelResult::not_found: return "not_found";
  }
  return "unknown";
}

Job job_from_row(const pqxx::row& row) {
  Job job;
  job.id = row["id"].as<int64_t>();
  job.kind = row["kind"].as<std::string>();
  job.queue = row["queue"].as<std::string>();
  job.state = job_state_from_string(row["state"].as<std::string>());
  job.priority = row["priority"].as<int>();
  job.args_json = row["args"].as<std::string>();
  job.progress_json = row["progress"].as<std::string>();
  job.result_json = row["result"].as<std::string>();
  job.errors_json = row["errors"].as<std::string>();
  job.attempt = row["attempt"].as<int>();
  job.max_attempts = row["max_attempts"].as<int>();
  job.scheduled_at = row["scheduled_at"].as<std::string>();
  job.attempted_at = row["attempted_at"].as<std::string>();
  job.finished_at = row["finished_at"].as<std::string>();
  job.created_at = row["created_at"].as<std::string>();
  job.lease_expires_at = row["lease_expires_at"].as<std::string>();
  if (!row["worker_id"].is_null()) job.worker_id = row["worker_id"].as<int64_t>();
  job.idempotency_key = row["idempotency_key"].as<std::string>();
  job.cancel_requested = row["cancel_requested"].as<bool>();
  job.required_tags = parse_text_array(row["requires"].as<std::string>());
  return job;
}

InsertResult job_insert(pqxx::transaction_base& txn, const JobInsert& job) {
  validate(job);
  // A key can be released (its job finishes) between our insert and our read:
  // then the insert is simply tried again.
  for (int attempt_idx = 0; attempt_idx < 5; ++attempt_idx) {
    auto rows = txn.exec_params(job_sql("job_insert"), job.kind, job.queue, job.priority, job.args_json,
                                job.max_attempts, job.delay_seconds, job.idempotency_key,
                                capability_array(job.required_tags));
    if (!rows.empty()) {
      txn.exec_params(job_sql("job_notify"), job.queue);
      return {job_from_row(rows[0]), true};
    }
    auto existing = txn.exec_params(job_sql("job_get_in_flight_by_key"), job.idempotency_key);
    if (!existing.empty()) return {job_from_row(existing[0]), false};
  }
  throw std::runtime_error("job_insert: idempotency key '" + job.idempotency_key + "' keeps changing owner");
}

InsertResult job_insert(pqxx::connection& conn, const JobInsert& job) {
  pqxx::work txn(conn);
  InsertResult result = job_insert(txn, job);
  txn.commit();
  return result;
}

std::vector<int64_t> job_insert_many(pqxx::connection& conn, const std::vector<JobInsert>& jobs) {
  for (const auto& job : jobs) validate(job);
  std::vector<int64_t> ids;
  ids.reserve(jobs.size());
  std::set<std::string> queues;
  pqxx::work txn(conn);
  // 5000 rows per statement keeps each JSON parameter a few hundred KB.
  constexpr size_t kChunk = 5000;
  for (size_t start = 0; start < jobs.size(); start += kChunk) {
    size_t end = std::min(jobs.size(), start + kChunk);
    std::string batch = "[";
    for (size_t job_idx = start; job_idx < end; ++job_idx) {
      const JobInsert& job = jobs[job_idx];
      queues.insert(job.queue);
      if (!job.idempotency_key.empty()) {
        // Keys need the conflict check of the single insert; flush what we have first.
        if (batch.size() > 1) {
          batch += "]";
          for (const auto& row : txn.exec_params(job_sql("job_insert_many"), batch)) ids.push_back(row[0].as<int64_t>());
          batch = "[";
        }
        ids.push_back(job_insert(txn, job).job.id);
        continue;
      }
      // Written by hand: kind and queue are validated names (nothing to escape) and
      // args_json was checked by validate(), so it is spliced in as it is.
      if (batch.size() > 1) batch += ",";
      batch += "{\"kind\":\"" + job.kind + "\",\"queue\":\"" + job.queue +
               "\",\"priority\":" + std::to_string(job.priority) + ",\"max_attempts\":" +
               std::to_string(job.max_attempts) + ",\"delay\":" + std::to_string(job.delay_seconds) +
               ",\"args\":" + job.args_json + "}";
    }
    if (batch.size() > 1) {
      batch += "]";
      for (const auto& row : txn.exec_params(job_sql("job_insert_many"), batch)) ids.push_back(row[0].as<int64_t>());
    }
  }
  for (const auto& queue : queues) txn.exec_params(job_sql("job_notify"), queue);
  txn.commit();
  return ids;
}

std::optional<Job> job_get(pqxx::connection& conn, int64_t id) {
  pqxx::read_transaction txn(conn);
  auto rows = txn.exec_params(job_sql("job_get"), id);
  if (rows.empty()) return std::nullopt;
  return job_from_row(rows[0]);
}

std::vector<Job> job_list(pqxx::connection& conn, const JobFilter& filter) {
  if (filter.limit < 1 || filter.limit > 1000)
    throw std::invalid_argument("job list limit " + std::to_string(filter.limit) + " is out of range 1..1000");
  if (filter.after_id < 0) throw std::invalid_argument("job list cursor must not be negative");
  pqxx::read_transaction txn(conn);
  auto rows = txn.exec_params(job_sql("job_list"), filter.kind, filter.state ? to_string(*filter.state) : "",
                              filter.after_id, filter.limit);
  std::vector<Job> jobs;
  jobs.reserve(rows.size());
  for (const auto& row : rows) jobs.push_back(job_from_row(row));
  return jobs;
}

CancelResult job_cancel(pqxx::connection& conn, int64_t id) {
  pqxx::work txn(conn);
  auto rows = txn.exec_params(job_sql("job_lock_state"), id);
  if (rows.empty()) return CancelResult::not_found;
  JobState state = job_state_from_string(rows[0][0].as<std::string>());
  CancelResult result;
  if (job_state_is_terminal(state)) {
    result = CancelResult::already_finished;
  } else if (state == JobState::running) {
    txn.exec_params0(job_sql("job_request_cancel"), id);
    txn.exec_params(job_sql("job_notify_cancel"), id);
    result = CancelResult::cancel_requested;
  } else {
    txn.exec_params0(job_sql("job_cancel_pending"), id);
    result = CancelResult::cancelled;
  }
  txn.commit();
  return result;
}

void queue_pause(pqxx::connection& conn, const std::string& queue) {
  if (!valid_name(queue)) throw std::invalid_argument("queue name '" + queue + "' is invalid");
  pqxx::work txn(conn);
  txn.exec_params0(job_sql("queue_pause"), queue);
  txn.commit();
}

void queue_resume(pqxx::connection& conn, const std::string& queue) {
  if (!valid_name(queue)) throw std::invalid_argument("queue name '" + queue + "' is invalid");
  pqxx::work txn(conn);
  txn.exec_params0(job_sql("queue_resume"), queue);
  txn.exec_params(job_sql("job_notify"), queue);
  txn.commit();
}

bool queue_is_paused(pqxx::connection& conn, const std::string& queue) {
  pqxx::read_transaction txn(conn);
  return txn.exec_params1(job_sql("queue_is_paused"), queue)[0].as<bool>();
}

int64_t job_prune(pqxx::connection& conn, double retention_seconds, int limit) {
  if (!(retention_seconds >= 0)) throw std::invalid_argument("prune retention must be >= 0 seconds");
  pqxx::work txn(conn);
  auto result = txn.exec_params(job_sql("job_prune"), retention_seconds, limit);
  txn.commit();
  return result.affected_rows();
}

std::string capability_array(const std::vector<std::string>& tags) {
  std::string out = "{";
  for (size_t tag_idx = 0; tag_idx < tags.size(); ++tag_idx) {
    const std::string& tag = tags[tag_idx];
    bool ok = !tag.empty() && tag.size() <= 128;
    for (char c : tag)
      ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == ':' || c == '-');
    if (!ok) throw std::invalid_argument("capability tag '" + tag + "' is invalid (use [a-z0-9_.:-])");
    out += (tag_idx ? "," : "") + tag;
  }
  return out + "}";
}

std::vector<std::string> parse_text_array(const std::string& text) {
  std::vector<std::string> out;
  if (text.size() < 2 || text.front() != '{' || text.back() != '}') return out;
  std::string item;
  for (size_t pos = 1; pos + 1 < text.size(); ++pos) {
    if (text[pos] == ',') {
      out.push_back(item);
      item.clear();
    } else if (text[pos] != '"') {
      item += text[pos];
    }
  }
  if (!item.empty()) out.push_back(item);
  return out;
}

std::string sql_bigint_array(const std::vector<int64_t>& values) {
  std::string out = "{";
  for (size_t value_idx = 0; value_idx < values.size(); ++value_idx) {
    if (value_idx) out += ",";
    out += std::to_string(values[value_idx]);
  }
  return out + "}";
}

}  // namespace kforge::db
