// /v1/health, /v1/ready and static files.
// Test: ctest -R 'server_system_test|api_core_test'.
#include "api/system_routes.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "api/errors.h"
#include "common/version.h"
#include "db/migrations.h"

namespace kforge::api {
namespace {

std::string content_type_for(const std::string& path) {
  auto ends_with = [&path](const std::string& suffix) {
    return path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with(".html")) return "text/html; charset=utf-8";
  if (ends_with(".js") || ends_with(".mjs")) return "text/javascript; charset=utf-8";
  if (ends_with(".css")) return "text/css; charset=utf-8";
  if (ends_with(".json")) return "application/json";
  if (ends_with(".svg")) return "image/svg+xml";
  if (ends_with(".png")) return "image/png";
  if (ends_with(".ico")) return "image/x-icon";
  return "application/octet-stream";
}

HttpResponse ready(SystemState& state) {
  if (!state.pool) return problem(ErrorKind::unavailable, "no database configured");
  try {
    auto conn = state.pool->acquire();
    try {
      auto pending = db::pending_migrations(*conn);
      if (!pending.empty()) {
        return problem(ErrorKind::unavailable, std::to_string(pending.size()) + " migration(s) not applied yet, first " +
                                                   pending.front());
      }
    } catch (const pqxx::broken_connection&) {
      conn.discard();
      throw;
    }
  } catch (const std::exception& e) {
    return problem(ErrorKind::unavailable, std::string("database unavailable: ") + e.what());
  }
  HttpResponse resp;
  resp.body = nlohmann::json{{"status", "ready"}, {"version", KFORGE_VERSION}}.dump();
  return resp;
}

}  // namespace

HttpResponse serve_static(const std::string& web_dir, const std::string& path) {
  std::string rel = path == "/" || path.empty() ? "/index.html" : path;
  if (rel.find("..") != std::string::npos || rel.find('\0') != std::string::npos) {
    return problem(ErrorKind::not_found, "no such file " + path);
  }
  // Only regular files: a directory ("/.", "/js/") opens as a stream that reads nothing.
  std::error_code ec;
  std::ifstream in;
  if (std::filesystem::is_regular_file(web_dir + rel, ec)) in.open(web_dir + rel, std::ios::binary);
  if (!in.is_open()) return problem(ErrorKind::not_found, "no route or file for " + path);
  std::ostringstream data;
  data << in.rdbuf();
  HttpResponse resp;
  resp.content_type = content_type_for(rel);
  resp.body = data.str();
  return resp;
}

const std::vector<std::string>& vendor_packages() {
  static const std::vector<std::string> packages = {"chart.js", "highlight.js"};
  return packages;
}

HttpResponse serve_vendor(const std::string& vendor_dir, const std::string& path) {
  const std::string prefix = "/vendor/";
  std::string rest = path.substr(prefix.size());
  std::string package = rest.substr(0, rest.find('/'));
  bool known = false;
  for (const auto& name : vendor_packages()) known = known || name == package;
  if (!known || rest.size() <= package.size() + 1) {
    return problem(ErrorKind::not_found, "no vendored file " + path + " (packages: chart.js, highlight.js)");
  }
  HttpResponse resp = serve_static(vendor_dir, "/" + rest);
  if (resp.status == 404) {
    resp = problem(ErrorKind::not_found, "no vendored file " + path + ": is the Debian package libjs-" + package +
                                             " installed? (scripts/install-deps.sh)");
  }
  // The files change only when the Debian package is upgraded: let browsers keep them a day.
  if (resp.status == 200) resp.headers.emplace_back("Cache-Control", "public, max-age=86400");
  return resp;
}

void add_system_routes(Router& router, SystemState& state) {
  router.add("GET", "/v1/health", [](HttpRequest&) {
    HttpResponse resp;
    resp.body = nlohmann::json{{"status", "ok"}, {"version", KFORGE_VERSION}}.dump();
    return resp;
  }, /*runs_inline=*/true);
  router.add("GET", "/v1/ready", [&state](HttpRequest&) { return ready(state); });
  router.set_fallback([&state](HttpRequest& req) {
    if (req.path.rfind("/v1/", 0) == 0) return problem(ErrorKind::not_found, "no route for " + req.path);
    HttpResponse file = req.path.rfind("/vendor/", 0) == 0 ? serve_vendor(state.vendor_dir, req.path)
                                                           : serve_static(state.web_dir, req.path);
    if (req.method == "GET" || req.method == "HEAD" || file.status != 200) return file;
    // A static file answers GET and HEAD only.
    if (req.method == "OPTIONS") return options_response("GET");
    HttpResponse resp = problem(ErrorKind::method_not_allowed, req.method + " is not allowed on " + req.path);
    resp.headers.emplace_back("Allow", "GET");
    return resp;
  });
}

}  // namespace kforge::api
