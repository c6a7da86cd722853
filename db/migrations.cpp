// Migration runner behind db/migrations.h.
// Test: scripts/test.sh build -R db_migrations_test.
#include "db/migrations.h"

#include <set>

#include "common/log.h"
#include "db/sql.h"

namespace kforge::db {
namespace {

// Any fixed 64-bit key; shared by every kforge process that migrates.
constexpr long long kMigrationLockKey = 0x6b666f7267650001LL;

std::set<std::string> applied(pqxx::transaction_base& txn) {
  std::set<std::string> names;
  auto exists = txn.exec1("SELECT to_regclass('schema_migrations') IS NOT NULL");
  if (!exists[0].as<bool>()) return names;
  for (const auto& row : txn.exec("SELECT name FROM schema_migrations")) names.insert(row[0].as<std::string>());
  return names;
}

}  // namespace

std::vector<std::string> migrate(pqxx::connection& conn) {
  pqxx::work txn(conn);
  // Transaction-scoped: released at commit or rollback, even if we crash.
  txn.exec("SELECT pg_advisory_xact_lock(" + std::to_string(kMigrationLockKey) + ")");
  txn.exec(
      "CREATE TABLE IF NOT EXISTS schema_migrations ("
      " name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())");
  std::set<std::string> done = applied(txn);
  std::vector<std::string> newly;
  for (const auto& [name, text] : migrations()) {
    if (done.count(name)) continue;
    txn.exec(text);
    txn.exec_params("INSERT INTO schema_migrations (name) VALUES ($1)", name);
    newly.push_back(name);
  }
  txn.commit();
  for (const auto& name : newly) log_info("db", "applied migration", {{"name", name}});
  return newly;
}

std::vector<std::string> pending_migrations(pqxx::connection& conn) {
  pqxx::read_transaction txn(conn);
  std::set<std::string> done = applied(txn);
  std::vector<std::string> pending;
  for (const auto& [name, text] : migrations()) {
    if (!done.count(name)) pending.push_back(name);
  }
  return pending;
}

}  // namespace kforge::db
