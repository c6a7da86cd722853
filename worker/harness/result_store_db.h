// The harness result cache on PostgreSQL: a ResultStore over the check_results table
// (db/check_results.h), so identical candidates are checked once across jobs and
// workers. Built with KFORGE_WITH_SERVER. Test: ctest -R harness_result_store.
#pragma once

#include <memory>

#include <pqxx/pqxx>

#include "worker/harness/checker.h"

namespace kforge::harness {

//! A ResultStore on `conn` (borrowed: it must outlive the store and not be used by
//! another thread during a check). Database errors become misses; they never fail a check.
std::shared_ptr<ResultStore> make_db_result_store(pqxx::connection& conn);

}  // namespace kforge::harness
