// Named SQL queries from db/queries/*.sql. A file holds blocks that start with
// "-- name: <query_name>"; sql("worker_register") returns that block's text.
// Test: scripts/test.sh build -R 'db_'.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kforge::db {

//! Text of a named query; throws std::out_of_range naming the query if unknown.
const std::string& sql(const std::string& name);

//! Migrations in order: (file name such as "001_init.sql", SQL text).
const std::vector<std::pair<std::string, std::string>>& migrations();

}  // namespace kforge::db
