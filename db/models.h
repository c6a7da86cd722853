// Model versions, evaluation results, training metrics and events: storage for
// /v1/models, /v1/evaluations and /v1/training-jobs/{id}/metrics|events.
// Training and evaluation jobs write here. Tested in tests/db/api_store_test.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <pqxx/pqxx>

namespace kforge::db {

//! One model version (HF-format files in `path`).
struct ModelRecord {
  int64_t id = 0;
  std::string name;
  int version = 1;
  int64_t parent_id = 0;  //!< 0 = none
  std::string state = "ready";
  std::string path;
  std::string files_json = "[]";  //!< [{name, size, sha256}]
  std::string config_json = "{}";
  std::string metrics_json = "{}";
  int64_t training_job_id = 0;
  std::string created_at;
};

//! Inserts a model version; fills id and created_at.
ModelRecord model_insert(pqxx::connection& conn, ModelRecord model);
//! One model by id.
std::optional<ModelRecord> model_get(pqxx::connection& conn, int64_t model_id);
//! By name, newest version when version is 0; archived versions only with include_archived
//! (numbering a new version must count them; resolving a request must not).
std::optional<ModelRecord> model_find(pqxx::connection& conn, const std::string& name, int version,
                                      bool include_archived = false);
//! Archives a version (state archived). False when it is training (or does not exist).
bool model_archive(pqxx::connection& conn, int64_t model_id);
//! Newest first with id < after_id (0: from the newest).
std::vector<ModelRecord> model_list(pqxx::connection& conn, int64_t after_id, int limit);

//! One evaluation result (a model version on a suite and target).
struct EvaluationRecord {
  int64_t id = 0;
  int64_t job_id = 0;
  int64_t model_id = 0;
  std::string suite;
  std::string target = "opencl";
  std::string device;
  std::string metrics_json = "{}";
  std::string tasks_json = "[]";
  std::string created_at;
};

//! Stores an evaluation result; returns its id.
int64_t evaluation_insert(pqxx::connection& conn, const EvaluationRecord& evaluation);
//! The result of an evaluate job, if it has one yet.
std::optional<EvaluationRecord> evaluation_get_by_job(pqxx::connection& conn, int64_t job_id);

//! One training step's metrics.
struct TrainingMetric {
  int step = 0;
  std::string metrics_json;
  std::string created_at;
};

//! Records (or replaces) a step's metrics.
void training_metric_insert(pqxx::connection& conn, int64_t job_id, int step, const std::string& metrics_json);
//! Steps after `after_step` in order.
std::vector<TrainingMetric> training_metric_list(pqxx::connection& conn, int64_t job_id, int after_step, int limit);

//! One training event.
struct TrainingEvent {
  int64_t id = 0;
  std::string level;
  std::string message;
  std::string data_json;
  std::string created_at;
};

//! Appends an event; returns its id.
int64_t training_event_insert(pqxx::connection& conn, int64_t job_id, const std::string& level,
                              const std::string& message, const std::string& data_json = "{}");
//! Events after `after_id` in order.
std::vector<TrainingEvent> training_event_list(pqxx::connection& conn, int64_t job_id, int64_t after_id, int limit);

}  // namespace kforge::db
