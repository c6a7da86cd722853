// Method + path-pattern routing ("/v1/ops/{id}"), answering 404 for unknown
// paths, 405 (with Allow) for a known path with the wrong method, 200 (with Allow)
// for OPTIONS on a known path, and 400 for a path or query holding NUL or invalid UTF-8.
// Test: ctest -R api_router_test.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "api/http.h"

namespace kforge::api {

using Handler = std::function<HttpResponse(HttpRequest&)>;
//! A non-blocking shortcut tried on the HTTP thread first (a cache lookup);
//! nullopt means "run the real handler on the executor".
using FastPath = std::function<std::optional<HttpResponse>(HttpRequest&)>;

//! Checks the decoded path and query of a request: 400 when any holds a NUL character
//! or invalid UTF-8 (they reach PostgreSQL as text). Router::dispatch runs it first.
std::optional<HttpResponse> check_request_text(const HttpRequest& req);

//! 200 with no content and Allow: `allowed` (registered methods, comma-separated) plus HEAD
//! when GET is among them, plus OPTIONS: the answer to OPTIONS on a known path.
HttpResponse options_response(const std::string& allowed);

class Router {
 public:
  //! Registers a handler; segments in braces capture into req.path_params.
  //! `runs_inline` marks a handler that never blocks (no database, no disk), so
  //! the HTTP adapter may run it on its own thread instead of the executor.
  void add(const std::string& method, const std::string& pattern, Handler handler, bool runs_inline = false);
  //! Finds and runs the handler; never throws (a throwing handler becomes 500).
  HttpResponse dispatch(HttpRequest& req) const;
  //! Handles requests no route matches (static files); 404 when unset.
  void set_fallback(Handler handler) { fallback_ = std::move(handler); }
  //! The route pattern a path matches, for metrics labels ("" if none).
  std::string route_of(const std::string& path) const;
  //! Attaches a fast path to an already registered route.
  void set_fast_path(const std::string& method, const std::string& pattern, FastPath fast_path);
  //! Runs the matching route's fast path, if it has one and it answers.
  std::optional<HttpResponse> try_fast_path(HttpRequest& req) const;
  //! True when the route for (method, path) was registered with runs_inline.
  bool runs_inline(const std::string& method, const std::string& path) const;
  //! Every registered (method, pattern), for tests that check the OpenAPI document.
  std::vector<std::pair<std::string, std::string>> routes() const;

 private:
  struct Route {
    std::string method;
    std::string pattern;
    std::vector<std::string> segments;
    Handler handler;
    bool runs_inline = false;
    FastPath fast_path;
  };
  std::vector<Route> routes_;
  Handler fallback_;
};

}  // namespace kforge::api
