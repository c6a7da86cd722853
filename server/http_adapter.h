// The one place that knows cpprestsdk: listens on host:port, converts each
// request to api::HttpRequest, runs the router, writes api::HttpResponse back.
#pragma once

#include <memory>
#include <string>

#include "api/router.h"

namespace kforge::server {

//! Options for the HTTP listener.
struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  size_t max_body_bytes = 1 << 20;
};

class HttpServer {
 public:
  HttpServer(const api::Router& router, HttpOptions options);
  ~HttpServer();
  //! Starts listening; throws std::runtime_error with a clear message (port in use...).
  void start();
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kforge::server
