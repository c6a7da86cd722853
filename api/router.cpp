// Linear-scan router: kforge has a few dozen routes; clarity beats a trie here.
// Test: ctest -R api_router_test.
#include "api/router.h"

#include <exception>
#include <map>

#include "api/errors.h"
#include "common/log.h"

namespace kforge::api {
namespace {

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::string current;
  for (char c : path) {
    if (c == '/') {
      if (!current.empty()) parts.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) parts.push_back(current);
  return parts;
}

bool match(const std::vector<std::string>& pattern, const std::vector<std::string>& parts,
           std::map<std::string, std::string>* params) {
  if (pattern.size() != parts.size()) return false;
  for (size_t seg_idx = 0; seg_idx < pattern.size(); ++seg_idx) {
    const std::string& seg = pattern[seg_idx];
    if (seg.size() > 2 && seg.front() == '{' && seg.back() == '}') {
      if (params) (*params)[seg.substr(1, seg.size() - 2)] = parts[seg_idx];
    } else if (seg != parts[seg_idx]) {
      return false;
    }
  }
  return true;
}

}  // namespace

HttpResponse options_response(const std::string& allowed) {
  std::string methods = allowed;
  if ((", " + methods + ",").find(", GET,") != std::string::npos) methods += ", HEAD";
  methods += ", OPTIONS";
  // 200 with no content (RFC 9110 9.3.7), not 204: the HTTP library always sends
  // Content-Length, which a 204 must not carry.
  HttpResponse resp;
  resp.status = 200;
  resp.content_type = "";
  resp.headers.emplace_back("Allow", methods);
  return resp;
}

void Router::add(const std::string& method, const std::string& pattern, Handler handler, bool runs_inline) {
  routes_.push_back({method, pattern, split_path(pattern), std::move(handler), runs_inline});
}

void Router::set_fast_path(const std::string& method, const std::string& pattern, FastPath fast_path) {
  for (auto& route : routes_) {
    if (route.method == method && route.pattern == pattern) route.fast_path = std::move(fast_path);
  }
}

std::optional<HttpResponse> Router::try_fast_path(HttpRequest& req) const {
  auto parts = split_path(req.path);
  for (const auto& route : routes_) {
    if (route.method != req.method || !match(route.segments, parts, nullptr)) continue;
    if (!route.fast_path) return std::nullopt;
    try {
      return route.fast_path(req);
    } catch (const std::exception&) {
      return std::nullopt;  // the real handler will run and report
    }
  }
  return std::nullopt;
}

bool Router::runs_inline(const std::string& method, const std::string& path) const {
  auto parts = split_path(path);
  for (const auto& route : routes_) {
    if (route.method == method && match(route.segments, parts, nullptr)) return route.runs_inline;
  }
  return false;
}

std::vector<std::pair<std::string, std::string>> Router::routes() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& route : routes_) out.emplace_back(route.method, route.pattern);
  return out;
}

std::string Router::route_of(const std::string& path) const {
  auto parts = split_path(path);
  for (const auto& route : routes_) {
    if (match(route.segments, parts, nullptr)) return route.pattern;
  }
  return "";
}

std::optional<HttpResponse> check_request_text(const HttpRequest& req) {
  // Paths and query values reach PostgreSQL as text: NUL or invalid UTF-8 would be a 500 there.
  if (!spec::storable_text(req.path)) {
    return problem(ErrorKind::bad_request, "the path holds a NUL character or invalid UTF-8");
  }
  for (const auto& [name, value] : req.query) {
    if (!spec::storable_text(name) || !spec::storable_text(value)) {
      std::string shown = spec::storable_text(name) ? name : "(unprintable)";
      return problem(ErrorKind::bad_request, "query parameter " + shown + " holds a NUL character or invalid UTF-8",
                     {{shown, "holds a NUL character or invalid UTF-8"}});
    }
  }
  return std::nullopt;
}

HttpResponse Router::dispatch(HttpRequest& req) const {
  if (auto bad = check_request_text(req)) return *bad;
  auto parts = split_path(req.path);
  std::string allowed;
  for (const auto& route : routes_) {
    std::map<std::string, std::string> params;
    if (!match(route.segments, parts, &params)) continue;
    if (route.method != req.method && !(req.method == "HEAD" && route.method == "GET")) {
      allowed += (allowed.empty() ? "" : ", ") + route.method;
      continue;
    }
    req.path_params = std::move(params);
    try {
      return route.handler(req);
    } catch (const std::exception& e) {
      log_error("api", "handler failed", {{"route", route.pattern}, {"error", e.what()}, {"request_id", req.request_id}});
      return problem(ErrorKind::internal, "internal error (request id " + req.request_id + ")");
    }
  }
  if (!allowed.empty() && req.method == "OPTIONS") return options_response(allowed);
  if (!allowed.empty()) {
    HttpResponse resp = problem(ErrorKind::method_not_allowed, req.method + " is not allowed on " + req.path);
    resp.headers.emplace_back("Allow", allowed);
    return resp;
  }
  if (fallback_) return fallback_(req);
  return problem(ErrorKind::not_found, "no route for " + req.path);
}

}  // namespace kforge::api
