// The harness result cache on PostgreSQL: a harness::ResultStore over the check_results
// table (db/check_results.h), so identical candidates are checked once across jobs and
// workers. Glue for the job runners (the harness itself never sees the database).
// Built with KFORGE_WITH_SERVER. Test: ctest -R jobs_result_store_db_test.
#pragma once

#include <memory>
#include <string>

#include <pqxx/pqxx>

#include "worker/harness/checker.h"

namespace kforge::jobs {

//! A ResultStore on `conn` (borrowed: it must outlive the store and not be used by
//! another thread during a check). Database errors become misses; they never fail a check.
std::shared_ptr<harness::ResultStore> make_db_result_store(pqxx::connection& conn);
//! A ResultStore over its own connection to `database_url`, reopened after an error (a
//! database restart costs the misses until it is back, never the cache for the rest of the job).
std::shared_ptr<harness::ResultStore> make_db_result_store(const std::string& database_url);

}  // namespace kforge::jobs
