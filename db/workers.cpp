// Worker registry queries (db/queries/workers.sql).
// Test: scripts/test.sh build -R 'worker_registration_test|api_resources_test'.
#include "db/workers.h"

#include "db/queue.h"
#include "db/sql.h"

namespace kforge::db {

int64_t worker_register(pqxx::connection& conn, const WorkerInfo& info) {
  pqxx::work txn(conn);
  auto row = txn.exec_params1(sql("worker_register"), info.host, info.pid, info.device, info.version, info.slots,
                              capability_array(info.capabilities));
  txn.commit();
  return row[0].as<int64_t>();
}

void worker_heartbeat(pqxx::connection& conn, int64_t worker_id, const std::string& state) {
  pqxx::work txn(conn);
  txn.exec_params0(sql("worker_heartbeat"), worker_id, state);
  txn.commit();
}

void worker_stop(pqxx::connection& conn, int64_t worker_id) {
  pqxx::work txn(conn);
  txn.exec_params0(sql("worker_stop"), worker_id);
  txn.commit();
}

int64_t worker_mark_dead(pqxx::connection& conn, double silent_seconds) {
  pqxx::work txn(conn);
  auto rows = txn.exec_params(sql("worker_mark_dead"), silent_seconds);
  txn.commit();
  return static_cast<int64_t>(rows.size());
}

int64_t worker_capable_count(pqxx::transaction_base& txn, const std::vector<std::string>& tags, double alive_seconds) {
  return txn.exec_params1(sql("worker_capable_count"), capability_array(tags), alive_seconds)[0].as<int64_t>();
}

}  // namespace kforge::db
