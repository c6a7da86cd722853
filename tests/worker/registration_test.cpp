// The real kforge-worker registers itself, heartbeats, and marks itself stopped
// on SIGTERM.
// Run: scripts/test.sh build -R worker_registration_test
#include <gtest/gtest.h>

#include <signal.h>

#include <thread>

#include "common/subprocess.h"
#include "db/connection.h"
#include "tests/support/processes.h"
#include "tests/support/test_db.h"

using namespace std::chrono_literals;

namespace {

// Returns (state, heartbeat age in seconds) of the worker row with this pid, or nullopt.
std::optional<std::pair<std::string, double>> worker_row(const std::string& url, pid_t pid) {
  auto conn = kforge::db::connect(url);
  pqxx::read_transaction txn(*conn);
  auto rows = txn.exec_params(
      "SELECT state, extract(epoch FROM now() - heartbeat_at)::float8 FROM workers WHERE pid = $1", pid);
  if (rows.empty()) return std::nullopt;
  return std::make_pair(rows[0][0].as<std::string>(), rows[0][1].as<double>());
}

}  // namespace

TEST(WorkerRegistration, RegistersHeartbeatsAndStops) {
  KFORGE_REQUIRE_DB();
  kforge::test::TestDatabase database;
  auto worker = kforge::Subprocess::spawn(
      {kforge::test::bin_path("kforge-worker"), "--database-url", database.url(), "--heartbeat-s", "0.2"});
  std::optional<std::pair<std::string, double>> row;
  for (int attempt = 0; attempt < 100 && !row; ++attempt) {
    std::this_thread::sleep_for(100ms);
    row = worker_row(database.url(), worker.pid());
  }
  ASSERT_TRUE(row) << "worker never registered";
  EXPECT_EQ(row->first, "idle");
  std::this_thread::sleep_for(1s);
  row = worker_row(database.url(), worker.pid());
  ASSERT_TRUE(row);
  EXPECT_LT(row->second, 1.0) << "heartbeat is stale";

  worker.signal(SIGTERM);
  auto status = worker.wait_for(10s);
  ASSERT_TRUE(status);
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
  row = worker_row(database.url(), worker.pid());
  ASSERT_TRUE(row);
  EXPECT_EQ(row->first, "stopped");
}
