// System routes: /v1/health (liveness, version), /v1/ready (database reachable and
// migrations applied), and static files from the web folder at /.
// Test: ctest -R 'server_system_test|api_core_test'.
#pragma once

#include <string>

#include "api/router.h"
#include "db/connection.h"

namespace kforge::api {

//! State the system routes read; owned by the server's main.
struct SystemState {
  db::ConnectionPool* pool = nullptr;
  std::string web_dir;
};

//! Adds /v1/health and /v1/ready, and sets the static-file fallback.
void add_system_routes(Router& router, SystemState& state);

//! Serves a file under web_dir for a GET path ("/" -> index.html); rejects "..".
HttpResponse serve_static(const std::string& web_dir, const std::string& path);

}  // namespace kforge::api
