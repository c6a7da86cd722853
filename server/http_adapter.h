// The one place that knows cpprestsdk: listens on host:port, converts each
// request to api::HttpRequest, runs the router on kforge's bounded executor
// (503 + Retry-After when saturated), writes api::HttpResponse back, counts
// metrics and writes the access log. Tested over HTTP in tests/server/.
#pragma once

#include <memory>
#include <string>

#include "api/executor.h"
#include "api/metrics.h"
#include "api/router.h"

namespace kforge::server {

//! Options for the HTTP listener.
struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  size_t max_body_bytes = 1 << 20;     //!< 413 above it (Content-Length or while reading chunks)
  size_t max_header_bytes = 16 << 10;  //!< 431 above it (names + values of all headers)
  bool access_log = true;              //!< one info line per request
  int threads = 0;                     //!< cpprestsdk's I/O and callback threads (0: default_http_threads())
};

//! Threads of cpprestsdk's pool when HttpOptions::threads is 0: two per CPU core, at least 4.
size_t default_http_threads();

class HttpServer {
 public:
  //! `executor` runs every handler not marked inline; `metrics` may be null.
  HttpServer(const api::Router& router, api::BoundedExecutor& executor, api::Metrics* metrics, HttpOptions options);
  ~HttpServer();
  //! Starts listening; throws std::runtime_error with a clear message (port in use...).
  void start();
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kforge::server
