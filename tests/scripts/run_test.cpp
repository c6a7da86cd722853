// `make run` supervision (scripts/run.sh, issue 18): with its own embedded PostgreSQL in
// a temp data dir and a free port, a SIGKILLed server or worker is restarted with the
// reason in run.log while PostgreSQL stays up, and SIGTERM stops everything. A model
// shipped under KFORGE_MODELS_DIR is registered on first start and named in the banner.
// Run: scripts/test.sh build -R scripts_run_test
#include <gtest/gtest.h>

#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/subprocess.h"
#include "tests/support/http_client.h"
#include "tests/support/processes.h"
#include "tests/support/test_db.h"
#include "tests/support/worker_process.h"

using namespace std::chrono_literals;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int read_pid(const std::string& path) {
  std::string text = read_file(path);
  return text.empty() ? 0 : std::atoi(text.c_str());
}

}  // namespace

TEST(RunScript, RestartsWhatDiesAndKeepsPostgres) {
  KFORGE_REQUIRE_DB();  // wherever the test cluster runs, pg.sh finds the server binaries
  char tmpl[] = "/tmp/kforge-run-test-XXXXXX";
  std::string data = mkdtemp(tmpl);
  int port = kforge::test::free_port();
  std::string bin_dir = kforge::test::bin_path("");
  std::string build_dir = std::filesystem::path(bin_dir).parent_path().parent_path().string();
  // A shipped model (models/<name>/ in a checkout): registered on first start.
  std::filesystem::create_directories(data + "/models/kforge-shipped");
  std::ofstream(data + "/models/kforge-shipped/config.json") << R"({"model_type": "qwen2"})";
  auto run = kforge::Subprocess::spawn(
      {"bash", kforge::test::source_path("scripts/run.sh"), build_dir},
      {"KFORGE_DATA_DIR=" + data, "KFORGE_PORT=" + std::to_string(port), "KFORGE_PG_FAST=1",
       "KFORGE_PG_PORT=" + std::to_string(kforge::test::free_port()), "KFORGE_DATABASE_URL=",
       "KFORGE_MODELS_DIR=" + data + "/models"},
      data + "/run.out");
  // Whatever happens below, stop run.sh with TERM (a SIGKILL would leave its children running).
  struct StopRun {
    kforge::Subprocess& run;
    ~StopRun() {
      if (run.running()) {
        run.signal(SIGTERM);
        run.wait_for(60s);
      }
    }
  } stop_run{run};
  ASSERT_TRUE(kforge::test::wait_for_status(port, "/v1/ready", 200, 120s)) << read_file(data + "/run.out");
  std::string pids = data + "/run/";
  auto models = kforge::test::http_request(port, "GET", "/v1/models", "", {}, 5);
  EXPECT_NE(models.body.find("\"kforge-shipped@1\""), std::string::npos) << models.body;
  EXPECT_TRUE(kforge::test::wait_until([&] { return read_file(data + "/run.out").find("kforge is running") != std::string::npos; }, 30s));
  EXPECT_NE(read_file(data + "/run.out").find("registered kforge-shipped: kforge-shipped@1"), std::string::npos)
      << "the banner says which model shipped: " << read_file(data + "/run.out");

  for (std::string child : {"kforge-server", "kforge-worker"}) {
    int before = read_pid(pids + child + ".pid");
    ASSERT_GT(before, 0) << child;
    ASSERT_EQ(kill(before, SIGKILL), 0) << child;
    EXPECT_TRUE(kforge::test::wait_until(
        [&] { return read_pid(pids + child + ".pid") != before && read_pid(pids + child + ".pid") > 0; }, 30s))
        << child << " was not restarted: " << read_file(data + "/run.out");
    EXPECT_TRUE(kforge::test::wait_for_status(port, "/v1/ready", 200, 60s)) << "after killing " << child;
    EXPECT_NE(read_file(data + "/log/run.log").find(child + " exited (killed by SIGKILL)"), std::string::npos)
        << read_file(data + "/log/run.log");
  }
  auto [status_code, status] =
      kforge::run_command({"env", "KFORGE_DATA_DIR=" + data, "bash", kforge::test::source_path("scripts/pg.sh"), "status"});
  EXPECT_EQ(status_code, 0) << "PostgreSQL must stay up when a child dies: " << status;
  EXPECT_TRUE(run.running()) << "run.sh itself must keep running";

  run.signal(SIGTERM);
  auto exited = run.wait_for(60s);
  ASSERT_TRUE(exited.has_value()) << "run.sh did not stop on SIGTERM";
  EXPECT_TRUE(WIFEXITED(*exited) && WEXITSTATUS(*exited) == 0) << read_file(data + "/run.out");
  auto [after_code, after] =
      kforge::run_command({"env", "KFORGE_DATA_DIR=" + data, "bash", kforge::test::source_path("scripts/pg.sh"), "status"});
  EXPECT_NE(after_code, 0) << "Ctrl-C / SIGTERM stops PostgreSQL too: " << after;
  EXPECT_NE(kforge::test::http_request(port, "GET", "/v1/health", "", {}, 2).status, 200) << "the server must be gone";
  kforge::run_command({"rm", "-rf", data});
}
