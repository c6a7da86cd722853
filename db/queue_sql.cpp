// Expands {{job_columns}} in the job queries once per name (see db/queue_sql.h).
// Test: scripts/test.sh build -R 'db_queue'.
#include "db/queue_sql.h"

#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include "db/sql.h"

namespace kforge::db {

const std::string& job_sql(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, std::string> cache;
  std::lock_guard lock(mutex);
  auto found = cache.find(name);
  if (found != cache.end()) return found->second;
  std::string text = sql(name);
  const std::string token = "{{job_columns}}";
  std::string columns = sql("job_columns");
  while (!columns.empty() && (columns.back() == '\n' || columns.back() == ' ')) columns.pop_back();
  for (auto pos = text.find(token); pos != std::string::npos; pos = text.find(token, pos + columns.size())) {
    text.replace(pos, token.size(), columns);
  }
  return cache.emplace(name, std::move(text)).first->second;
}

void job_prepare(pqxx::connection& conn, const std::string& name) {
  // Keyed by connection and backend pid: a new connection at a reused address
  // (after a reconnect) is a new backend and is prepared again.
  static std::mutex mutex;
  static std::set<std::tuple<const void*, int, std::string>> prepared;
  auto key = std::make_tuple(static_cast<const void*>(&conn), conn.backendpid(), name);
  {
    std::lock_guard lock(mutex);
    if (prepared.count(key)) return;
  }
  conn.prepare(name, job_sql(name));
  std::lock_guard lock(mutex);
  prepared.insert(key);
}

}  // namespace kforge::db
