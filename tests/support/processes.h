// Starting the real kforge binaries from tests. Binaries live in KFORGE_BIN_DIR
// (build/bin) and scripts in KFORGE_SOURCE_DIR, both set by tests/CMakeLists.txt.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/subprocess.h"

namespace kforge::test {

//! Full path of a kforge binary such as "kforge-server".
std::string bin_path(const std::string& name);
//! Full path of a file in the source tree such as "scripts/pg.sh".
std::string source_path(const std::string& rel);

//! Polls GET path on 127.0.0.1:port until it answers `status` or the timeout passes.
bool wait_for_status(int port, const std::string& path, int status, std::chrono::milliseconds timeout);

//! Starts kforge-server on `port` against `database_url` (log in a temp file) and
//! waits for /v1/health; throws with the log tail if it does not come up.
Subprocess start_server(int port, const std::string& database_url, const std::vector<std::string>& extra_args = {},
                        const std::vector<std::string>& extra_env = {});

}  // namespace kforge::test
