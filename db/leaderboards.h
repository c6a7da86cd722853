// Leaderboard queries: best correct kernel per (op, target, device) and the
// latest evaluation per (model version, suite, target), keyset-paginated.
// Tested in tests/db/api_store_test.cpp and through /v1/leaderboard/*.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <pqxx/pqxx>

namespace kforge::db {

//! One ops-leaderboard row.
struct OpLeaderRow {
  int64_t op_id = 0;
  std::string op_name;
  std::string target;
  std::string device;
  int64_t candidate_id = 0;
  int64_t job_id = 0;
  int64_t model_id = 0;
  std::optional<double> speedup;
  std::optional<double> speedup_vs_compile;  //!< GPU only: against torch.compile (null where not measured)
  std::optional<double> kernel_ms;
  std::optional<double> baseline_ms;
  std::string created_at;
  int level = 0;          //!< the op's suite level, 0 = none
  std::string generator;  //!< "name@version" of the model, else "teacher" / "policy" / ""
};

//! Which ops-leaderboard rows to return; empty / 0 fields mean any.
struct OpLeaderFilter {
  std::string target;
  std::string device;
  int level = 0;
  int64_t op_id = 0;  //!< one op only
};

//! Rows strictly after (op_id, target, device) in that order that pass the filter.
std::vector<OpLeaderRow> leaderboard_ops(pqxx::connection& conn, int64_t after_op_id, const std::string& after_target,
                                         const std::string& after_device, const OpLeaderFilter& filter, int limit);

//! One models-leaderboard row.
struct ModelLeaderRow {
  int64_t model_id = 0;
  std::string model_name;
  int model_version = 0;
  std::string suite;
  std::string target;
  std::string device;
  int64_t evaluation_id = 0;
  int64_t job_id = 0;
  std::string metrics_json;
  std::string created_at;
};

//! Rows strictly after (model_id, suite, target); suite "" = any.
std::vector<ModelLeaderRow> leaderboard_models(pqxx::connection& conn, int64_t after_model_id,
                                               const std::string& after_suite, const std::string& after_target,
                                               const std::string& suite_filter, int limit);

}  // namespace kforge::db
