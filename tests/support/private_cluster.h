// A private PostgreSQL cluster (scripts/pg.sh under a temp folder, own port) that
// a test may stop and restart without disturbing the shared test cluster.
// Needs the PostgreSQL server binaries (present wherever `make test` runs).
#pragma once

#include <string>
#include <utility>

namespace kforge::test {

//! Created on construction (not started); stopped and deleted on destruction.
class PrivateCluster {
 public:
  PrivateCluster();
  ~PrivateCluster();
  PrivateCluster(const PrivateCluster&) = delete;
  PrivateCluster& operator=(const PrivateCluster&) = delete;

  //! Runs `scripts/pg.sh <command>` (start, stop, status) for this cluster: {exit code, output}.
  std::pair<int, std::string> run(const std::string& command);
  //! URL of its `kforge` database.
  std::string url() const;

 private:
  std::string dir_;
  std::string port_;
};

}  // namespace kforge::test
