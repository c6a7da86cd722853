// Server-side prepared statements for hot named queries: each connection
// prepares a query from db/queries once, so repeated requests skip PostgreSQL's
// planning (1.2 ms of the leaderboard query's 1.6 ms; see bench/results/api.json).
#pragma once

#include <string>

#include <pqxx/pqxx>

namespace kforge::db {

//! Prepares the named query (db::sql(name)) on this connection unless it already
//! is. Call outside a transaction; then txn.exec_prepared(name, ...).
void ensure_prepared(pqxx::connection& conn, const std::string& name);

}  // namespace kforge::db
