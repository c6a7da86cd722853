// Method + path-pattern routing ("/v1/ops/{id}"), answering 404 for unknown
// paths and 405 (with Allow) for a known path with the wrong method.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "api/http.h"

namespace kforge::api {

using Handler = std::function<HttpResponse(HttpRequest&)>;

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
  };
  std::vector<Route> routes_;
  Handler fallback_;
};

}  // namespace kforge::api
