// Internal to the queue (db/queue.cpp, db/queue_worker.cpp): named job queries
// with {{job_columns}} expanded, and the row -> Job conversion.
// Test: scripts/test.sh build -R 'db_queue'.
#pragma once

#include <string>

#include <pqxx/pqxx>

#include "db/queue.h"

namespace kforge::db {

//! sql(name) with "{{job_columns}}" replaced by the job_columns block (cached).
const std::string& job_sql(const std::string& name);

//! A row selected with {{job_columns}} as a Job.
Job job_from_row(const pqxx::row& row);

//! Prepares job query `name` on this connection once (per backend), so hot paths
//! (claim, complete, heartbeat) skip parse and plan. Call before opening the
//! transaction, then txn.exec_prepared(name, ...).
void job_prepare(pqxx::connection& conn, const std::string& name);

}  // namespace kforge::db
