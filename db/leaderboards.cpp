// Leaderboard queries (db/queries/leaderboards.sql).
// Test: scripts/test.sh build -R 'db_api_store_test|api_resources_test'.
#include "db/leaderboards.h"

#include "db/prepared.h"
#include "db/sql.h"

namespace kforge::db {
namespace {

std::optional<double> optional_double(const pqxx::field& field) {
  if (field.is_null()) return std::nullopt;
  return field.as<double>();
}

}  // namespace

std::vector<OpLeaderRow> leaderboard_ops(pqxx::connection& conn, int64_t after_op_id, const std::string& after_target,
                                         const std::string& after_device, const OpLeaderFilter& filter, int limit) {
  // Filters are planned per call (see leaderboard_ops_filtered); the common,
  // unfiltered page is prepared once per connection.
  ensure_prepared(conn, "leaderboard_ops");  // before the transaction: libpqxx 7 prepares at once
  pqxx::nontransaction txn(conn);  // one statement in autocommit: no BEGIN/COMMIT round trips
  pqxx::result rows;
  if (filter.op_id > 0 || !filter.device.empty() || filter.level > 0) {
    rows = txn.exec_params(sql("leaderboard_ops_filtered"), after_op_id, after_target, after_device, filter.target,
                           filter.device, filter.level, filter.op_id, limit);
  } else {
    rows = txn.exec_prepared("leaderboard_ops", after_op_id, after_target, after_device, filter.target, limit);
  }
  std::vector<OpLeaderRow> out;
  for (const auto& row : rows) {
    OpLeaderRow r;
    r.op_id = row[0].as<int64_t>();
    r.op_name = row[1].as<std::string>();
    r.target = row[2].as<std::string>();
    r.device = row[3].as<std::string>();
    r.candidate_id = row[4].as<int64_t>();
    r.job_id = row[5].as<int64_t>();
    r.model_id = row[6].as<int64_t>();
    r.speedup = optional_double(row[7]);
    r.kernel_ms = optional_double(row[8]);
    r.baseline_ms = optional_double(row[9]);
    r.created_at = row[10].as<std::string>();
    r.level = row[11].as<int>();
    r.generator = row[12].as<std::string>();
    r.speedup_vs_compile = optional_double(row[13]);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<ModelLeaderRow> leaderboard_models(pqxx::connection& conn, int64_t after_model_id,
                                               const std::string& after_suite, const std::string& after_target,
                                               const std::string& suite_filter, int limit) {
  ensure_prepared(conn, "leaderboard_models");
  // One statement in autocommit: no BEGIN/COMMIT round trips for a read.
  pqxx::nontransaction txn(conn);
  std::vector<ModelLeaderRow> out;
  for (const auto& row :
       txn.exec_prepared("leaderboard_models", after_model_id, after_suite, after_target, suite_filter, limit)) {
    ModelLeaderRow r;
    r.model_id = row[0].as<int64_t>();
    r.model_name = row[1].as<std::string>();
    r.model_version = row[2].as<int>();
    r.suite = row[3].as<std::string>();
    r.target = row[4].as<std::string>();
    r.device = row[5].as<std::string>();
    r.evaluation_id = row[6].as<int64_t>();
    r.job_id = row[7].as<int64_t>();
    r.metrics_json = row[8].as<std::string>();
    r.created_at = row[9].as<std::string>();
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace kforge::db
