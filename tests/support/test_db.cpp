// Per-test databases behind test_db.h.
// Used by every database test, e.g. scripts/test.sh build -R db_queue_test.
#include "tests/support/test_db.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <stdexcept>

#include "db/connection.h"
#include "db/migrations.h"

namespace kforge::test {

std::optional<std::string> test_cluster_url() {
  const char* url = std::getenv("KFORGE_TEST_DATABASE_URL");
  if (!url || !*url) return std::nullopt;
  return std::string(url);
}

std::string url_with_database(const std::string& url, const std::string& database) {
  // postgresql://user@host:port/dbname?params
  auto scheme_end = url.find("://");
  if (scheme_end == std::string::npos) throw std::invalid_argument("not a postgresql:// URL: " + url);
  auto path_start = url.find('/', scheme_end + 3);
  auto query_start = url.find('?', scheme_end + 3);
  std::string base = url.substr(0, path_start == std::string::npos ? query_start : path_start);
  std::string query = query_start == std::string::npos ? "" : url.substr(query_start);
  return base + "/" + database + query;
}

TestDatabase::TestDatabase(bool migrate) {
  auto cluster = test_cluster_url();
  if (!cluster) throw std::runtime_error("KFORGE_TEST_DATABASE_URL is not set");
  admin_url_ = *cluster;
  static std::atomic<int> counter{0};
  name_ = "kforge_t_" + std::to_string(getpid()) + "_" + std::to_string(counter++);
  {
    auto admin = db::connect(admin_url_);
    pqxx::nontransaction txn(*admin);
    txn.exec("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
    txn.exec("CREATE DATABASE " + name_);
  }
  url_ = url_with_database(admin_url_, name_);
  if (migrate) {
    auto conn = db::connect(url_);
    db::migrate(*conn);
  }
}

TestDatabase::~TestDatabase() {
  try {
    auto admin = db::connect(admin_url_);
    pqxx::nontransaction txn(*admin);
    txn.exec("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  } catch (...) {  // the cluster may already be gone; the test run's cleanup drops it
  }
}

}  // namespace kforge::test
