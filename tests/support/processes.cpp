// Process helpers behind processes.h.
// Used by the tests that start kforge binaries, e.g. ctest -R 'server_system_test|cli_test'.
#include "tests/support/processes.h"

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tests/support/http_client.h"

namespace kforge::test {

std::string bin_path(const std::string& name) { return std::string(KFORGE_BIN_DIR) + "/" + name; }

std::string source_path(const std::string& rel) { return std::string(KFORGE_SOURCE_DIR) + "/" + rel; }

bool wait_for_status(int port, const std::string& path, int status, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (http_request(port, "GET", path, "", {}, 2).status == status) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

Subprocess start_server(int port, const std::string& database_url, const std::vector<std::string>& extra_args,
                        const std::vector<std::string>& extra_env) {
  std::string log_path = "/tmp/kforge-test-server-" + std::to_string(port) + ".log";
  std::remove(log_path.c_str());
  std::vector<std::string> argv = {bin_path("kforge-server"), "--port", std::to_string(port), "--database-url",
                                   database_url, "--web-dir", source_path("web")};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  Subprocess server = Subprocess::spawn(argv, extra_env, log_path);
  if (!wait_for_status(port, "/v1/health", 200, std::chrono::seconds(20))) {
    std::ifstream in(log_path);
    std::stringstream log;
    log << in.rdbuf();
    throw std::runtime_error("kforge-server did not come up on port " + std::to_string(port) + "; log:\n" + log.str());
  }
  return server;
}

}  // namespace kforge::test
