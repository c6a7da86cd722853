// cpprestsdk http_listener adapter. The request body is read asynchronously and
// the router runs in the continuation; the access log line is written here.
#include "server/http_adapter.h"

#include <atomic>
#include <chrono>
#include <stdexcept>

#include <cpprest/http_listener.h>
#include <cpprest/uri.h>

#include "api/errors.h"
#include "common/log.h"

namespace kforge::server {

namespace http = web::http;

struct HttpServer::Impl {
  const api::Router& router;
  HttpOptions options;
  std::unique_ptr<http::experimental::listener::http_listener> listener;
  std::atomic<uint64_t> next_request_id{1};

  Impl(const api::Router& r, HttpOptions o) : router(r), options(std::move(o)) {}

  static void reply(http::http_request& request, const api::HttpResponse& resp) {
    http::http_response out(static_cast<http::status_code>(resp.status));
    out.headers().set_content_type(resp.content_type);
    for (const auto& [name, value] : resp.headers) out.headers().add(name, value);
    out.set_body(std::vector<unsigned char>(resp.body.begin(), resp.body.end()));
    out.headers().set_content_type(resp.content_type);
    request.reply(out).then([](pplx::task<void> t) {
      try {
        t.get();
      } catch (...) {  // client went away; nothing to do
      }
    });
  }

  void handle(http::http_request request) {
    auto started = std::chrono::steady_clock::now();
    api::HttpRequest req;
    req.method = request.method();
    req.request_id = std::to_string(next_request_id++);
    const auto& uri = request.relative_uri();
    req.path = web::uri::decode(uri.path());
    for (const auto& [key, value] : web::uri::split_query(web::uri::decode(uri.query()))) req.query[key] = value;
    for (const auto& [name, value] : request.headers()) {
      std::string lower = name;
      for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      req.headers[lower] = value;
    }
    auto finish = [this, request, started](api::HttpRequest& req, const api::HttpResponse& resp) mutable {
      reply(request, resp);
      auto micros = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started);
      log_debug("http", "request",
                {{"method", req.method}, {"path", req.path}, {"status", std::to_string(resp.status)},
                 {"duration_ms", std::to_string(micros.count() / 1000.0)}, {"request_id", req.request_id}});
    };
    if (request.headers().content_length() > options.max_body_bytes) {
      finish(req, api::problem(api::ErrorKind::payload_too_large,
                               "request body exceeds " + std::to_string(options.max_body_bytes) + " bytes"));
      return;
    }
    request.extract_vector().then([this, req, finish](pplx::task<std::vector<unsigned char>> body_task) mutable {
      try {
        auto body = body_task.get();
        if (body.size() > options.max_body_bytes) {
          finish(req, api::problem(api::ErrorKind::payload_too_large,
                                   "request body exceeds " + std::to_string(options.max_body_bytes) + " bytes"));
          return;
        }
        req.body.assign(body.begin(), body.end());
      } catch (const std::exception& e) {
        finish(req, api::problem(api::ErrorKind::bad_request, std::string("could not read body: ") + e.what()));
        return;
      }
      finish(req, router.dispatch(req));
    });
  }
};

HttpServer::HttpServer(const api::Router& router, HttpOptions options)
    : impl_(std::make_unique<Impl>(router, std::move(options))) {}

HttpServer::~HttpServer() { stop(); }

void HttpServer::start() {
  std::string address = "http://" + impl_->options.host + ":" + std::to_string(impl_->options.port);
  impl_->listener = std::make_unique<http::experimental::listener::http_listener>(address);
  impl_->listener->support([this](http::http_request request) { impl_->handle(std::move(request)); });
  try {
    impl_->listener->open().wait();
  } catch (const std::exception& e) {
    impl_->listener.reset();
    throw std::runtime_error("cannot listen on " + address + ": " + e.what() +
                             " (is another kforge-server running? choose another --port)");
  }
  log_info("server", "listening", {{"url", address}});
}

void HttpServer::stop() {
  if (!impl_->listener) return;
  try {
    impl_->listener->close().wait();
  } catch (...) {
  }
  impl_->listener.reset();
}

}  // namespace kforge::server
