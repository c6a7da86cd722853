// Migrations apply once, in order, even when many processes race to apply them.
// Run: scripts/test.sh build -R db_migrations_test
#include <gtest/gtest.h>

#include <thread>

#include "db/connection.h"
#include "db/migrations.h"
#include "db/sql.h"
#include "tests/support/test_db.h"

TEST(Migrations, ApplyOnceAndReportNothingPendingAfter) {
  KFORGE_REQUIRE_DB();
  kforge::test::TestDatabase database(/*migrate=*/false);
  auto conn = kforge::db::connect(database.url());
  auto pending = kforge::db::pending_migrations(*conn);
  ASSERT_EQ(pending.size(), kforge::db::migrations().size());
  auto applied = kforge::db::migrate(*conn);
  EXPECT_EQ(applied, pending);
  EXPECT_TRUE(kforge::db::migrate(*conn).empty());
  EXPECT_TRUE(kforge::db::pending_migrations(*conn).empty());
}

TEST(Migrations, ConcurrentMigratorsApplyEachFileExactlyOnce) {
  KFORGE_REQUIRE_DB();
  kforge::test::TestDatabase database(/*migrate=*/false);
  constexpr int kMigrators = 8;
  std::vector<size_t> applied_counts(kMigrators, 0);
  std::vector<std::string> errors(kMigrators);
  std::vector<std::thread> threads;
  for (int migrator_idx = 0; migrator_idx < kMigrators; ++migrator_idx) {
    threads.emplace_back([&, migrator_idx] {
      try {
        auto conn = kforge::db::connect(database.url());
        applied_counts[migrator_idx] = kforge::db::migrate(*conn).size();
      } catch (const std::exception& e) {
        errors[migrator_idx] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  size_t total = 0;
  for (int migrator_idx = 0; migrator_idx < kMigrators; ++migrator_idx) {
    EXPECT_EQ(errors[migrator_idx], "") << "migrator " << migrator_idx;
    total += applied_counts[migrator_idx];
  }
  // One migrator did all the work; the others waited on the lock and found none.
  EXPECT_EQ(total, kforge::db::migrations().size());
  auto conn = kforge::db::connect(database.url());
  pqxx::read_transaction txn(*conn);
  auto rows = txn.exec1("SELECT count(*), count(DISTINCT name) FROM schema_migrations");
  EXPECT_EQ(rows[0].as<size_t>(), kforge::db::migrations().size());
  EXPECT_EQ(rows[1].as<size_t>(), kforge::db::migrations().size());
}

TEST(NamedQueries, UnknownNameIsAClearError) {
  try {
    kforge::db::sql("no_such_query");
    FAIL() << "expected an exception";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_query"), std::string::npos);
  }
  EXPECT_NE(kforge::db::sql("worker_register").find("INSERT INTO workers"), std::string::npos);
}
