// Op and candidate queries (db/queries/ops.sql).
// Test: scripts/test.sh build -R 'db_api_store_test|api_resources_test'.
#include "db/ops.h"

#include "db/sql.h"

namespace kforge::db {
namespace {

OpRecord op_from_row(const pqxx::row& row) {
  OpRecord op;
  op.id = row[0].as<int64_t>();
  op.name = row[1].as<std::string>();
  op.source = row[2].as<std::string>();
  op.compiled_source = row[3].as<std::string>();
  op.spec_json = row[4].as<std::string>();
  op.spec_sha256 = row[5].as<std::string>();
  op.outputs_json = row[6].as<std::string>();
  op.created_at = row[7].as<std::string>();
  op.level = row[8].as<int>();
  return op;
}

std::optional<double> optional_double(const pqxx::field& field) {
  if (field.is_null()) return std::nullopt;
  return field.as<double>();
}

CandidateRecord candidate_from_row(const pqxx::row& row) {
  CandidateRecord c;
  c.id = row[0].as<int64_t>();
  c.job_id = row[1].as<int64_t>();
  c.op_id = row[2].as<int64_t>();
  c.model_id = row[3].as<int64_t>();
  c.sample_idx = row[4].as<int>();
  c.target = row[5].as<std::string>();
  c.device = row[6].as<std::string>();
  c.source = row[7].as<std::string>();
  c.outcome = row[8].as<std::string>();
  c.message = row[9].as<std::string>();
  c.reward = optional_double(row[10]);
  c.kernel_ms = optional_double(row[11]);
  c.baseline_ms = optional_double(row[12]);
  c.speedup = optional_double(row[13]);
  c.flagged = row[14].as<bool>();
  c.details_json = row[15].as<std::string>();
  c.created_at = row[16].as<std::string>();
  return c;
}

std::vector<CandidateRecord> candidates_from(const pqxx::result& rows) {
  std::vector<CandidateRecord> out;
  for (const auto& row : rows) out.push_back(candidate_from_row(row));
  return out;
}

}  // namespace

OpRecord op_insert(pqxx::connection& conn, OpRecord op) {
  pqxx::work txn(conn);
  auto row = txn.exec_params1(sql("op_insert"), op.name, op.source, op.compiled_source, op.spec_json, op.spec_sha256,
                              op.outputs_json, op.created_by, op.level);
  txn.commit();
  op.id = row[0].as<int64_t>();
  op.created_at = row[1].as<std::string>();
  return op;
}

std::optional<OpRecord> op_get(pqxx::connection& conn, int64_t op_id) {
  pqxx::read_transaction txn(conn);
  auto result = txn.exec_params(sql("op_get"), op_id);
  if (result.empty()) return std::nullopt;
  return op_from_row(result[0]);
}

std::optional<OpRecord> op_find_by_sha256(pqxx::connection& conn, const std::string& spec_sha256) {
  pqxx::read_transaction txn(conn);
  auto result = txn.exec_params(sql("op_find_by_sha256"), spec_sha256);
  if (result.empty()) return std::nullopt;
  return op_from_row(result[0]);
}

std::vector<OpRecord> op_list(pqxx::connection& conn, int64_t after_id, int limit) {
  pqxx::read_transaction txn(conn);
  std::vector<OpRecord> out;
  for (const auto& row : txn.exec_params(sql("op_list"), after_id, limit)) out.push_back(op_from_row(row));
  return out;
}

OpDelete op_delete(pqxx::connection& conn, int64_t op_id) {
  OpDelete out;
  pqxx::work txn(conn);
  out.found = !txn.exec_params(sql("op_lock"), op_id).empty();
  if (!out.found) return out;
  out.in_flight = txn.exec_params1(sql("op_generations_in_flight"), op_id)[0].as<int64_t>();
  if (out.in_flight > 0) return out;
  out.candidates_deleted = txn.exec_params1(sql("op_delete"), op_id)[0].as<int64_t>();
  txn.commit();
  return out;
}

int64_t candidate_insert(pqxx::connection& conn, const CandidateRecord& c) {
  pqxx::work txn(conn);
  auto row = txn.exec_params1(sql("candidate_insert"), c.job_id, c.op_id, c.model_id, c.sample_idx, c.target, c.device,
                              c.source, c.outcome, c.message, c.reward, c.kernel_ms, c.baseline_ms, c.speedup,
                              c.flagged, c.details_json);
  txn.commit();
  return row[0].as<int64_t>();
}

bool candidate_begin_attempt(pqxx::connection& conn, const JobLease& lease) {
  pqxx::work txn(conn);
  bool held = txn.exec_params1(sql("candidate_begin_attempt"), lease.job_id, lease.worker_id, lease.attempt)[0]
                  .as<bool>();
  txn.commit();
  return held;
}

std::optional<int64_t> candidate_write(pqxx::connection& conn, const JobLease& lease, const CandidateRecord& c) {
  pqxx::work txn(conn);
  auto rows = txn.exec_params(sql("candidate_write"), lease.job_id, c.op_id, c.model_id, c.sample_idx, c.target,
                              c.device, c.source, c.outcome, c.message, c.reward, c.kernel_ms, c.baseline_ms,
                              c.speedup, c.flagged, c.details_json, lease.worker_id, lease.attempt);
  txn.commit();
  if (rows.empty()) return std::nullopt;
  return rows[0][0].as<int64_t>();
}

std::vector<CandidateRecord> candidate_list_for_job(pqxx::connection& conn, int64_t job_id, int64_t after_id,
                                                    int limit) {
  pqxx::read_transaction txn(conn);
  return candidates_from(txn.exec_params(sql("candidate_list_for_job"), job_id, after_id, limit));
}

std::vector<CandidateRecord> candidate_list_for_op(pqxx::connection& conn, int64_t op_id, int64_t after_id, int limit) {
  pqxx::read_transaction txn(conn);
  return candidates_from(txn.exec_params(sql("candidate_list_for_op"), op_id, after_id, limit));
}

std::optional<CandidateRecord> candidate_get(pqxx::connection& conn, int64_t candidate_id) {
  pqxx::read_transaction txn(conn);
  auto result = txn.exec_params(sql("candidate_get"), candidate_id);
  if (result.empty()) return std::nullopt;
  return candidate_from_row(result[0]);
}

std::optional<CandidateRecord> candidate_best_for_job(pqxx::connection& conn, int64_t job_id) {
  pqxx::read_transaction txn(conn);
  auto result = txn.exec_params(sql("candidate_best_for_job"), job_id);
  if (result.empty()) return std::nullopt;
  return candidate_from_row(result[0]);
}

std::vector<std::pair<std::string, int64_t>> candidate_counts_for_job(pqxx::connection& conn, int64_t job_id) {
  pqxx::read_transaction txn(conn);
  std::vector<std::pair<std::string, int64_t>> out;
  for (const auto& row : txn.exec_params(sql("candidate_counts_for_job"), job_id)) {
    out.emplace_back(row[0].as<std::string>(), row[1].as<int64_t>());
  }
  return out;
}

}  // namespace kforge::db
