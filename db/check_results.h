// The harness result cache table (migration 004_check_results.sql): identical
// candidates (same op, program, device and check options) are checked once across
// jobs and workers. Tested in tests/worker/harness/result_store_test.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <pqxx/pqxx>

namespace kforge::db {

//! One stored check result.
struct CheckResultRow {
  std::string store_key;       //!< op hash : program sha256 : device : options fingerprint
  std::string program_sha256;
  std::string device;
  std::string outcome;
  std::string result_json;     //!< harness CheckResult::to_json()
  int64_t hits = 0;            //!< times served from the cache
};

//! The stored result JSON for `store_key`, counting a hit; nullopt on a miss.
std::optional<std::string> check_result_hit(pqxx::connection& conn, const std::string& store_key);
//! Stores a result; an existing row for the key is kept (first writer wins). True if inserted.
bool check_result_put(pqxx::connection& conn, const CheckResultRow& row);
//! The row for `store_key` without counting a hit.
std::optional<CheckResultRow> check_result_get(pqxx::connection& conn, const std::string& store_key);

}  // namespace kforge::db
