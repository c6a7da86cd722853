// The web UI in headless Chromium against the real kforge-server and kforge-worker:
// a fresh database seeded with tests/web/seed.sql, the server serving web/ and
// Debian's chart.js / highlight.js, one worker on PoCL, then tests/web/browser_test.py
// (Selenium) checks every page and saves screenshots under build/test-artifacts/web.
// Skipped, with the reason, when chromium, chromedriver or python3-selenium is missing.
// Run: scripts/test.sh build -R web_browser
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "db/connection.h"
#include "tests/server/api_fixture.h"
#include "tests/support/processes.h"
#include "tests/support/worker_process.h"
#include "worker/harness/devices.h"

using namespace std::chrono_literals;

namespace {

namespace fs = std::filesystem;

// Debian's python3-selenium lives in /usr/bin/python3's path; a pyenv or venv python3
// earlier in PATH would not see it.
std::string python() { return fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3"; }

std::string on_path(const std::string& name) {
  auto [code, output] = kforge::run_command({"/bin/sh", "-c", "command -v " + name});
  while (!output.empty() && (output.back() == '\n' || output.back() == '\r')) output.pop_back();
  return code == 0 ? output : "";
}

// Why the browser test cannot run here, or "" when it can.
std::string missing_browser() {
  std::vector<std::string> missing;
  if (on_path("chromium").empty()) missing.push_back("chromium");
  if (on_path("chromedriver").empty()) missing.push_back("chromium-driver");
  if (kforge::run_command({python(), "-c", "import selenium"}).first != 0) missing.push_back("python3-selenium");
  if (missing.empty()) return "";
  std::string text;
  for (const auto& name : missing) text += (text.empty() ? "" : ", ") + name;
  return "not installed: " + text + " (scripts/install-deps.sh installs them; make test runs it)";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST(WebBrowser, EveryPageInHeadlessChromium) {
  KFORGE_REQUIRE_DB();
  if (auto why = missing_browser(); !why.empty()) GTEST_SKIP() << why;
  if (kforge::harness::list_devices().empty()) GTEST_SKIP() << "no OpenCL device (install pocl-opencl-icd)";
  if (!fs::exists("/usr/share/javascript/chart.js/chart.mjs") ||
      !fs::exists("/usr/share/javascript/highlight.js/highlight.min.js")) {
    GTEST_SKIP() << "libjs-chart.js / libjs-highlight.js not installed (scripts/install-deps.sh installs them)";
  }

  kforge::test::ApiServer server;
  {
    auto conn = kforge::db::connect(server.database.url());
    pqxx::work txn(*conn);
    txn.exec(read_file(kforge::test::source_path("tests/web/seed.sql")));
    txn.commit();
  }
  std::string worker_log;
  auto worker = kforge::test::start_worker("kforge-worker", server.database.url(), {"--poll-s", "0.5"}, &worker_log);

  std::string artifacts = std::string(KFORGE_WEB_ARTIFACTS_DIR);
  fs::remove_all(artifacts);
  fs::create_directories(artifacts);
  std::string output_path = artifacts + "/browser_test.log";
  auto browser = kforge::Subprocess::spawn(
      {python(), kforge::test::source_path("tests/web/browser_test.py"), "--base-url",
       "http://127.0.0.1:" + std::to_string(server.port), "--submit-token", server.submit, "--admin-token",
       server.admin, "--artifacts", artifacts},
      {}, output_path);
  auto status = browser.wait_for(std::chrono::seconds(780));
  if (!status) {
    browser.signal(SIGTERM);  // browser_test.py closes Chromium on SIGTERM
    browser.wait_for(30s);
  }
  worker.signal(SIGTERM);
  worker.wait_for(30s);

  std::string output = read_file(output_path);
  std::cout << output;
  ASSERT_TRUE(status.has_value()) << "the browser test did not finish in 13 minutes";
  ASSERT_TRUE(WIFEXITED(*status)) << "the browser test was killed by signal " << WTERMSIG(*status);
  int code = WEXITSTATUS(*status);
  if (code == 77) GTEST_SKIP() << output;
  EXPECT_EQ(code, 0) << output << "\nworker log tail:\n" << kforge::test::file_tail(worker_log)
                        << "\nserver log tail:\n" << server.log().substr(server.log().size() > 4000 ? server.log().size() - 4000 : 0);
}
