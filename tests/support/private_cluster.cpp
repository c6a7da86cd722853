// PrivateCluster behind private_cluster.h (same approach as tests/server/system_test.cpp).
// Used by ctest -R worker_cluster_test.
#include "tests/support/private_cluster.h"

#include <stdlib.h>

#include "common/subprocess.h"
#include "tests/support/http_client.h"
#include "tests/support/processes.h"

namespace kforge::test {

PrivateCluster::PrivateCluster() : port_(std::to_string(free_port())) {
  char tmpl[] = "/tmp/kforge-pgtest-XXXXXX";
  dir_ = mkdtemp(tmpl);
}

PrivateCluster::~PrivateCluster() {
  run("stop");
  run_command({"rm", "-rf", dir_});
}

std::pair<int, std::string> PrivateCluster::run(const std::string& command) {
  return run_command({"env", "KFORGE_DATA_DIR=" + dir_, "KFORGE_PG_FAST=1", "KFORGE_PG_PORT=" + port_, "bash",
                      source_path("scripts/pg.sh"), command});
}

std::string PrivateCluster::url() const { return "postgresql://kforge@127.0.0.1:" + port_ + "/kforge"; }

}  // namespace kforge::test
