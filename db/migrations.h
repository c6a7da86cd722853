// Schema migrations: numbered files db/migrations/NNN_name.sql, applied in order
// in one transaction under an advisory lock, recorded in schema_migrations.
// Test: scripts/test.sh build -R db_migrations_test.
#pragma once

#include <string>
#include <vector>

#include <pqxx/pqxx>

namespace kforge::db {

//! Applies every migration not yet recorded. Safe to call from several processes
//! at once: the advisory lock serialises them and the loser finds nothing to do.
//! Returns the names it applied (empty when up to date).
std::vector<std::string> migrate(pqxx::connection& conn);

//! Names of embedded migrations not yet applied in this database.
std::vector<std::string> pending_migrations(pqxx::connection& conn);

}  // namespace kforge::db
