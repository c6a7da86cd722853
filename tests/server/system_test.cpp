// The real kforge-server binary over real HTTP: health, ready, static files,
// problem+json, the HTTP pool's size, and /v1/ready following the database down and back up.
// Run: scripts/test.sh build -R server_system_test
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/subprocess.h"
#include "db/connection.h"
#include "tests/support/http_client.h"
#include "tests/support/processes.h"
#include "tests/support/test_db.h"

using namespace std::chrono_literals;
using kforge::test::http_request;

TEST(ServerSystem, HealthReadyStaticAndErrors) {
  KFORGE_REQUIRE_DB();
  kforge::test::TestDatabase database;
  int port = kforge::test::free_port();
  auto server = kforge::test::start_server(port, database.url());

  auto health = http_request(port, "GET", "/v1/health");
  ASSERT_EQ(health.status, 200);
  auto body = nlohmann::json::parse(health.body);
  EXPECT_EQ(body["status"], "ok");
  EXPECT_FALSE(body["version"].get<std::string>().empty());

  EXPECT_TRUE(kforge::test::wait_for_status(port, "/v1/ready", 200, 10s));

  auto index = http_request(port, "GET", "/");
  EXPECT_EQ(index.status, 200);
  EXPECT_NE(index.headers["content-type"].find("text/html"), std::string::npos);
  EXPECT_NE(index.body.find("kforge"), std::string::npos);

  auto traversal = http_request(port, "GET", "/../CMakeLists.txt");
  EXPECT_EQ(traversal.status, 404);

  auto missing = http_request(port, "GET", "/v1/nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.headers["content-type"], "application/problem+json");

  auto wrong_method = http_request(port, "POST", "/v1/health", "{}");
  EXPECT_EQ(wrong_method.status, 405);

  server.signal(SIGTERM);
  auto status = server.wait_for(10s);
  ASSERT_TRUE(status) << "server did not stop on SIGTERM";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
}

TEST(ServerSystem, PortInUseIsAClearErrorNotACrash) {
  KFORGE_REQUIRE_DB();
  kforge::test::TestDatabase database;
  int port = kforge::test::free_port();
  auto first = kforge::test::start_server(port, database.url());
  auto [code, output] = kforge::run_command({kforge::test::bin_path("kforge-server"), "--port", std::to_string(port),
                                             "--database-url", database.url()});
  EXPECT_EQ(code, 1);
  EXPECT_NE(output.find("cannot listen"), std::string::npos) << output;
}

TEST(ServerSystem, TwoServersStartingAtOnceApplyMigrationsOnce) {
  KFORGE_REQUIRE_DB();
  kforge::test::TestDatabase database(/*migrate=*/false);
  int port_a = kforge::test::free_port();
  int port_b = kforge::test::free_port();
  auto a = kforge::test::start_server(port_a, database.url());
  auto b = kforge::test::start_server(port_b, database.url());
  EXPECT_TRUE(kforge::test::wait_for_status(port_a, "/v1/ready", 200, 20s));
  EXPECT_TRUE(kforge::test::wait_for_status(port_b, "/v1/ready", 200, 20s));
  auto conn = kforge::db::connect(database.url());
  pqxx::read_transaction txn(*conn);
  auto row = txn.exec1("SELECT count(*) = count(DISTINCT name) FROM schema_migrations");
  EXPECT_TRUE(row[0].as<bool>());
}

namespace {

// Threads of a running process (/proc/PID/task), read once the server is ready and
// its migrator thread has finished.
int thread_count(pid_t pid) {
  int count = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    ++count;
  }
  return count;
}

int ready_server_threads(const std::string& url, const std::vector<std::string>& args) {
  int port = kforge::test::free_port();
  auto server = kforge::test::start_server(port, url, args);
  EXPECT_TRUE(kforge::test::wait_for_status(port, "/v1/ready", 200, 20s));
  std::this_thread::sleep_for(300ms);  // the migrator thread returns after the last migration
  EXPECT_EQ(http_request(port, "GET", "/v1/leaderboard/ops").status, 200);
  return thread_count(server.pid());
}

}  // namespace

// --http-threads sizes cpprestsdk's pool (its own default, 40, cost the leaderboard
// its p99 on 2 cores: docs/api.md); the default is two per core, at least 4.
TEST(ServerSystem, HttpThreadsSizeCpprestsdksPool) {
  KFORGE_REQUIRE_DB();
  kforge::test::TestDatabase database;
  int three = ready_server_threads(database.url(), {"--http-threads", "3"});
  int thirty_three = ready_server_threads(database.url(), {"--http-threads", "33"});
  int by_default = ready_server_threads(database.url(), {});
  EXPECT_EQ(thirty_three - three, 30) << "each --http-threads is one pool thread";
  int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_EQ(by_default - three, std::max(4, 2 * cores) - 3) << "default: two per core, at least 4";

  for (std::string bad : {"-1", "1025", "many"}) {
    auto [code, output] = kforge::run_command({kforge::test::bin_path("kforge-server"), "--http-threads", bad,
                                               "--port", std::to_string(kforge::test::free_port()),
                                               "--database-url", database.url()});
    EXPECT_EQ(code, 2) << bad << ": " << output;
    EXPECT_NE(output.find("http-threads"), std::string::npos) << output;
  }
}

// Runs scripts/pg.sh against a private cluster so stopping it affects no other test.
class PrivateCluster {
 public:
  PrivateCluster() : dir_(make_dir()) {}
  ~PrivateCluster() {
    run("stop");
    kforge::run_command({"rm", "-rf", dir_});
  }
  std::pair<int, std::string> run(const std::string& command) {
    return kforge::run_command({"env", "KFORGE_DATA_DIR=" + dir_, "KFORGE_PG_FAST=1", "KFORGE_PG_PORT=" + port_,
                                "bash", kforge::test::source_path("scripts/pg.sh"), command});
  }
  std::string url() const { return "postgresql://kforge@127.0.0.1:" + port_ + "/kforge"; }

 private:
  static std::string make_dir() {
    char tmpl[] = "/tmp/kforge-pgtest-XXXXXX";
    return mkdtemp(tmpl);
  }
  std::string dir_;
  std::string port_ = std::to_string(kforge::test::free_port());
};

TEST(ServerSystem, ReadyFollowsTheDatabaseWithoutRestart) {
  KFORGE_REQUIRE_DB();  // needs the PostgreSQL binaries that make test installs
  PrivateCluster cluster;
  auto [code, out] = cluster.run("start");
  ASSERT_EQ(code, 0) << out;
  int port = kforge::test::free_port();
  auto server = kforge::test::start_server(port, cluster.url());
  ASSERT_TRUE(kforge::test::wait_for_status(port, "/v1/ready", 200, 20s));

  auto [stop_code, stop_out] = cluster.run("stop");
  ASSERT_EQ(stop_code, 0) << stop_out;
  ASSERT_TRUE(kforge::test::wait_for_status(port, "/v1/ready", 503, 20s));
  auto down = http_request(port, "GET", "/v1/ready");
  EXPECT_EQ(down.headers["content-type"], "application/problem+json");
  EXPECT_NE(down.body.find("database unavailable"), std::string::npos) << down.body;
  EXPECT_EQ(http_request(port, "GET", "/v1/health").status, 200) << "liveness must not depend on the database";

  auto [start_code, start_out] = cluster.run("start");
  ASSERT_EQ(start_code, 0) << start_out;
  EXPECT_TRUE(kforge::test::wait_for_status(port, "/v1/ready", 200, 30s));
}
