// Harness result cache queries (db/queries/check_results.sql).
// Tested in tests/worker/harness/result_store_test.cpp.
#include "db/check_results.h"

#include "db/sql.h"

namespace kforge::db {

std::optional<std::string> check_result_hit(pqxx::connection& conn, const std::string& store_key) {
  pqxx::work txn(conn);
  auto rows = txn.exec_params(sql("check_result_hit"), store_key);
  txn.commit();
  if (rows.empty()) return std::nullopt;
  return rows[0][0].as<std::string>();
}

bool check_result_put(pqxx::connection& conn, const CheckResultRow& row) {
  pqxx::work txn(conn);
  auto result = txn.exec_params(sql("check_result_put"), row.store_key, row.program_sha256, row.device, row.outcome,
                                row.result_json);
  txn.commit();
  return result.affected_rows() == 1;
}

std::optional<CheckResultRow> check_result_get(pqxx::connection& conn, const std::string& store_key) {
  pqxx::work txn(conn);
  auto rows = txn.exec_params(sql("check_result_get"), store_key);
  if (rows.empty()) return std::nullopt;
  CheckResultRow row;
  row.store_key = rows[0][0].as<std::string>();
  row.program_sha256 = rows[0][1].as<std::string>();
  row.device = rows[0][2].as<std::string>();
  row.outcome = rows[0][3].as<std::string>();
  row.result_json = rows[0][4].as<std::string>();
  row.hits = rows[0][5].as<int64_t>();
  return row;
}

}  // namespace kforge::db
