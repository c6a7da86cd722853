// ensure_prepared behind db/prepared.h. libpqxx 7 prepares at once and refuses a
// duplicate, libpqxx 6 prepares lazily; remembering (connection, backend pid)
// pairs works for both and forgets a connection that reconnected.
// Test: every database test (ctest -L db through scripts/test.sh).
#include "db/prepared.h"

#include <mutex>
#include <set>
#include <tuple>

#include "db/sql.h"

namespace kforge::db {

void ensure_prepared(pqxx::connection& conn, const std::string& name) {
  static std::mutex mutex;
  static std::set<std::tuple<const void*, int, std::string>> prepared;
  auto key = std::make_tuple(static_cast<const void*>(&conn), conn.backendpid(), name);
  {
    std::lock_guard lock(mutex);
    if (prepared.count(key)) return;
  }
  conn.prepare(name, sql(name));
  std::lock_guard lock(mutex);
  prepared.insert(key);
}

}  // namespace kforge::db
