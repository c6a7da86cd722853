// A fresh PostgreSQL database per test, migrated, dropped afterwards.
// `make test` exports KFORGE_TEST_DATABASE_URL (the throwaway cluster's admin URL);
// without it, database tests are skipped with that reason.
#pragma once

#include <optional>
#include <string>

namespace kforge::test {

//! The cluster URL from KFORGE_TEST_DATABASE_URL, or nullopt.
std::optional<std::string> test_cluster_url();

//! Creates database kforge_t_<pid>_<n> on construction (migrated unless told not
//! to) and drops it (WITH FORCE) on destruction.
class TestDatabase {
 public:
  explicit TestDatabase(bool migrate = true);
  ~TestDatabase();
  TestDatabase(const TestDatabase&) = delete;
  TestDatabase& operator=(const TestDatabase&) = delete;

  //! URL of this test's database.
  const std::string& url() const { return url_; }
  const std::string& name() const { return name_; }

 private:
  std::string admin_url_;
  std::string name_;
  std::string url_;
};

//! Replaces the database name (path) of a postgresql:// URL.
std::string url_with_database(const std::string& url, const std::string& database);

}  // namespace kforge::test

//! Skips the current test (with the reason) when no test cluster is configured.
#define KFORGE_REQUIRE_DB()                                                                       \
  do {                                                                                            \
    if (!::kforge::test::test_cluster_url())                                                      \
      GTEST_SKIP() << "KFORGE_TEST_DATABASE_URL is not set (run through `make test`)";            \
  } while (0)
