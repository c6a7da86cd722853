// Model, evaluation and training-progress queries (db/queries/models.sql).
// Test: scripts/test.sh build -R 'db_api_store_test|api_resources_test'.
#include "db/models.h"

#include "db/sql.h"

namespace kforge::db {
namespace {

ModelRecord model_from_row(const pqxx::row& row) {
  ModelRecord m;
  m.id = row[0].as<int64_t>();
  m.name = row[1].as<std::string>();
  m.version = row[2].as<int>();
  m.parent_id = row[3].as<int64_t>();
  m.state = row[4].as<std::string>();
  m.path = row[5].as<std::string>();
  m.files_json = row[6].as<std::string>();
  m.config_json = row[7].as<std::string>();
  m.metrics_json = row[8].as<std::string>();
  m.training_job_id = row[9].as<int64_t>();
  m.created_at = row[10].as<std::string>();
  return m;
}

std::optional<ModelRecord> first_model(const pqxx::result& result) {
  if (result.empty()) return std::nullopt;
  return model_from_row(result[0]);
}

}  // namespace

ModelRecord model_insert(pqxx::connection& conn, ModelRecord m) {
  pqxx::work txn(conn);
  auto row = txn.exec_params1(sql("model_insert"), m.name, m.version, m.parent_id, m.state, m.path, m.files_json,
                              m.config_json, m.metrics_json, m.training_job_id);
  txn.commit();
  m.id = row[0].as<int64_t>();
  m.created_at = row[1].as<std::string>();
  return m;
}

std::optional<ModelRecord> model_get(pqxx::connection& conn, int64_t model_id) {
  pqxx::read_transaction txn(conn);
  return first_model(txn.exec_params(sql("model_get"), model_id));
}

std::optional<ModelRecord> model_find(pqxx::connection& conn, const std::string& name, int version,
                                      bool include_archived) {
  pqxx::read_transaction txn(conn);
  return first_model(txn.exec_params(sql("model_find"), name, version, include_archived));
}

bool model_archive(pqxx::connection& conn, int64_t model_id) {
  pqxx::work txn(conn);
  bool archived = !txn.exec_params(sql("model_archive"), model_id).empty();
  txn.commit();
  return archived;
}

std::vector<ModelRecord> model_list(pqxx::connection& conn, int64_t after_id, int limit) {
  pqxx::read_transaction txn(conn);
  std::vector<ModelRecord> out;
  for (const auto& row : txn.exec_params(sql("model_list"), after_id, limit)) out.push_back(model_from_row(row));
  return out;
}

int64_t evaluation_insert(pqxx::connection& conn, const EvaluationRecord& e) {
  pqxx::work txn(conn);
  auto row = txn.exec_params1(sql("evaluation_insert"), e.job_id, e.model_id, e.suite, e.target, e.device,
                              e.metrics_json, e.tasks_json);
  txn.commit();
  return row[0].as<int64_t>();
}

std::optional<EvaluationRecord> evaluation_get_by_job(pqxx::connection& conn, int64_t job_id) {
  pqxx::read_transaction txn(conn);
  auto result = txn.exec_params(sql("evaluation_get_by_job"), job_id);
  if (result.empty()) return std::nullopt;
  const auto& row = result[0];
  EvaluationRecord e;
  e.id = row[0].as<int64_t>();
  e.job_id = row[1].as<int64_t>();
  e.model_id = row[2].as<int64_t>();
  e.suite = row[3].as<std::string>();
  e.target = row[4].as<std::string>();
  e.device = row[5].as<std::string>();
  e.metrics_json = row[6].as<std::string>();
  e.tasks_json = row[7].as<std::string>();
  e.created_at = row[8].as<std::string>();
  return e;
}

void training_metric_insert(pqxx::connection& conn, int64_t job_id, int step, const std::string& metrics_json) {
  pqxx::work txn(conn);
  txn.exec_params0(sql("training_metric_insert"), job_id, step, metrics_json);
  txn.commit();
}

std::vector<TrainingMetric> training_metric_list(pqxx::connection& conn, int64_t job_id, int after_step, int limit) {
  pqxx::read_transaction txn(conn);
  std::vector<TrainingMetric> out;
  for (const auto& row : txn.exec_params(sql("training_metric_list"), job_id, after_step, limit)) {
    out.push_back({row[0].as<int>(), row[1].as<std::string>(), row[2].as<std::string>()});
  }
  return out;
}

int64_t training_event_insert(pqxx::connection& conn, int64_t job_id, const std::string& level,
                              const std::string& message, const std::string& data_json) {
  pqxx::work txn(conn);
  auto row = txn.exec_params1(sql("training_event_insert"), job_id, level, message, data_json);
  txn.commit();
  return row[0].as<int64_t>();
}

std::vector<TrainingEvent> training_event_list(pqxx::connection& conn, int64_t job_id, int64_t after_id, int limit) {
  pqxx::read_transaction txn(conn);
  std::vector<TrainingEvent> out;
  for (const auto& row : txn.exec_params(sql("training_event_list"), job_id, after_id, limit)) {
    out.push_back({row[0].as<int64_t>(), row[1].as<std::string>(), row[2].as<std::string>(), row[3].as<std::string>(),
                   row[4].as<std::string>()});
  }
  return out;
}

}  // namespace kforge::db
