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
  void add(const std::string& method, const std::string& pattern, Handler handler);
  //! Finds and runs the handler; never throws (a throwing handler becomes 500).
  HttpResponse dispatch(HttpRequest& req) const;
  //! Handles requests no route matches (static files); 404 when unset.
  void set_fallback(Handler handler) { fallback_ = std::move(handler); }
  //! The route pattern a path matches, for metrics labels ("" if none).
  std::string route_of(const std::string& path) const;

 private:
  struct Route {
    std::string method;
    std::string pattern;
    std::vector<std::string> segments;
    Handler handler;
  };
  std::vector<Route> routes_;
  Handler fallback_;
};

}  // namespace kforge::api
