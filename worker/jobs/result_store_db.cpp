// DbResultStore: CheckOptions::result_store on the check_results table. A database
// error is logged once per store and treated as a miss (checking goes on without the
// cache). Test: ctest -R jobs_result_store_db_test.
#include "worker/jobs/result_store_db.h"

#include <iostream>

#include "db/check_results.h"

namespace kforge::jobs {

using harness::CheckResult;
namespace {

class DbResultStore : public harness::ResultStore {
 public:
  explicit DbResultStore(pqxx::connection& conn) : conn_(conn) {}

  std::optional<std::string> load(const std::string& key) override {
    try {
      return db::check_result_hit(conn_, key);
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
      db::check_result_put(conn_, row);
    } catch (const std::exception& e) {
      report(e);
    }
  }

 private:
  void report(const std::exception& e) {
    if (reported_) return;
    reported_ = true;
    std::cerr << "harness result store: database error, checking without the shared cache: " << e.what() << "\n";
  }

  pqxx::connection& conn_;
  bool reported_ = false;
};

}  // namespace

std::shared_ptr<harness::ResultStore> make_db_result_store(pqxx::connection& conn) {
  return std::make_shared<DbResultStore>(conn);
}

}  // namespace kforge::jobs
