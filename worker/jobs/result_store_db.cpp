// DbResultStore: CheckOptions::result_store on the check_results table. A database
// error is logged once per store and treated as a miss (checking goes on without the
// cache); a store made from a URL reconnects on its next use. Test: ctest -R jobs_result_store_db_test.
#include "worker/jobs/result_store_db.h"

#include <functional>
#include <iostream>

#include "db/check_results.h"
#include "db/connection.h"

namespace kforge::jobs {

using harness::CheckResult;
namespace {

// Reads and writes check_results through `conn()`; `drop()` is called after an error so
// a store over a db::Link reconnects on its next use.
class DbResultStore : public harness::ResultStore {
 public:
  DbResultStore(std::function<pqxx::connection&()> conn, std::function<void()> drop)
      : conn_(std::move(conn)), drop_(std::move(drop)) {}

  std::optional<std::string> load(const std::string& key) override {
    try {
      return db::check_result_hit(conn_(), key);
    } catch (const std::exception& e) {
      report(e);
      return std::nullopt;
    }
  }

  void save(const std::string& key, const CheckResult& result) override {
    db::CheckResultRow row;
    row.store_key = key;
    row.program_sha256 = result.program_hash;
    row.device = result.environment.device;
    row.outcome = harness::outcome_name(result.outcome);
    row.result_json = result.to_json();
    try {
      db::check_result_put(conn_(), row);
    } catch (const std::exception& e) {
      report(e);
    }
  }

 private:
  void report(const std::exception& e) {
    if (drop_) drop_();
    if (reported_) return;
    reported_ = true;
    std::cerr << "harness result store: database error, checking without the shared cache: " << e.what() << "\n";
  }

  std::function<pqxx::connection&()> conn_;
  std::function<void()> drop_;
  bool reported_ = false;
};

}  // namespace

std::shared_ptr<harness::ResultStore> make_db_result_store(pqxx::connection& conn) {
  return std::make_shared<DbResultStore>([&conn]() -> pqxx::connection& { return conn; }, nullptr);
}

std::shared_ptr<harness::ResultStore> make_db_result_store(const std::string& database_url) {
  auto link = std::make_shared<db::Link>(database_url);
  return std::make_shared<DbResultStore>([link]() -> pqxx::connection& { return link->get(); },
                                         [link] { link->reset(); });
}

}  // namespace kforge::jobs
