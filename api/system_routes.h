// System routes: /v1/health (liveness, version), /v1/ready (database reachable and
// migrations applied), static files from the web folder at /, and the Debian-packaged
// browser libraries the UI uses at /vendor/<package>/ (docs/web.md).
// Tested in tests/server/system_test.cpp and tests/server/api_web_test.cpp.
#pragma once

#include <string>
#include <vector>

#include "api/router.h"
#include "db/connection.h"

namespace kforge::api {

//! State the system routes read; owned by the server's main.
struct SystemState {
  db::ConnectionPool* pool = nullptr;
  std::string web_dir;
  std::string vendor_dir = "/usr/share/javascript";  //!< Debian's libjs-* packages
};

//! The packages under vendor_dir that /vendor/ serves (chart.js, highlight.js).
const std::vector<std::string>& vendor_packages();

//! Adds /v1/health and /v1/ready, and sets the static-file fallback.
void add_system_routes(Router& router, SystemState& state);

//! Serves a file under web_dir for a GET path ("/" -> index.html); rejects "..".
HttpResponse serve_static(const std::string& web_dir, const std::string& path);

//! Serves /vendor/<package>/<file> from vendor_dir for the packages above, cacheable for a day.
HttpResponse serve_vendor(const std::string& vendor_dir, const std::string& path);

}  // namespace kforge::api
