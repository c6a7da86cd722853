// Worker-process helpers behind worker_process.h.
// Used by ctest -R 'worker_(jobs|cluster)_test'.
#include "tests/support/worker_process.h"

#include <cstdlib>

#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "db/connection.h"
#include "tests/support/processes.h"

namespace kforge::test {

Subprocess start_worker(const std::string& binary, const std::string& url, const std::vector<std::string>& args,
                        std::string* log_path) {
  static std::atomic<int> counter{0};
  std::string log = "/tmp/kforge-test-" + binary + "-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + ".log";
  std::remove(log.c_str());
  std::vector<std::string> argv = {bin_path(binary), "--database-url", url};
  argv.insert(argv.end(), args.begin(), args.end());
  if (log_path) *log_path = log;
  // Test workers run the CPU paths and say so, instead of probing the host's devices at
  // start (on a GPU host that probe imports torch and triton: seconds per worker start).
  std::vector<std::string> env;
  if (!std::getenv("KFORGE_WORKER_CAPABILITIES")) env.push_back("KFORGE_WORKER_CAPABILITIES=target:opencl,device:cpu");
  return Subprocess::spawn(argv, env, log);
}

bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string sql_value(const std::string& url, const std::string& query) {
  auto conn = db::connect(url);
  pqxx::work txn(*conn);
  auto rows = txn.exec(query);
  txn.commit();
  if (rows.empty() || rows[0][0].is_null()) return "";
  return rows[0][0].as<std::string>();
}

std::string file_tail(const std::string& path, size_t max_chars) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string all = text.str();
  return all.size() > max_chars ? all.substr(all.size() - max_chars) : all;
}

}  // namespace kforge::test
