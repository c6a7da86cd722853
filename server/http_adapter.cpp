// cpprestsdk http_listener adapter. Flow per request, all without blocking a
// cpprestsdk pool thread: check headers and Content-Length -> read the body in
// 64 KiB steps (413 as soon as it passes the limit, chunked or not) -> hand the
// handler to the bounded executor (or run it here if the route is inline) ->
// reply (api/conditional.h: ETag, 304), count, log. See docs/api.md for what cpprestsdk does not let us bound.
#include "server/http_adapter.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>

#include <cpprest/filestream.h>
#include <cpprest/http_listener.h>
#include <cpprest/uri.h>
#include <pplx/threadpool.h>

#include "api/conditional.h"
#include "api/errors.h"
#include "common/log.h"

namespace kforge::server {

namespace http = web::http;

namespace {

constexpr size_t kReadStep = 64 << 10;

// On every response. The policy fits the web UI: its own scripts, styles and
// /vendor/ libraries only, data: images (the favicon), fetch() to this origin, never framed.
const std::pair<const char*, const char*> kSecurityHeaders[] = {
    {"Content-Security-Policy",
     "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
     "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"},
    {"X-Content-Type-Options", "nosniff"},
    {"X-Frame-Options", "DENY"},
    {"Referrer-Policy", "no-referrer"},
    {"Cross-Origin-Opener-Policy", "same-origin"},
};

bool valid_request_id(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

std::string random_prefix() {
  std::random_device device;
  std::mt19937_64 gen(device());
  char buf[17];
  std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(gen()));
  return buf;
}

}  // namespace

size_t default_http_threads() {
  size_t cores = std::max(1u, std::thread::hardware_concurrency());
  return std::max<size_t>(4, 2 * cores);
}

struct HttpServer::Impl {
  const api::Router& router;
  api::BoundedExecutor& executor;
  api::Metrics* metrics;
  HttpOptions options;
  std::unique_ptr<http::experimental::listener::http_listener> listener;
  std::string id_prefix = random_prefix();
  std::atomic<uint64_t> next_request_id{1};

  Impl(const api::Router& r, api::BoundedExecutor& e, api::Metrics* m, HttpOptions o)
      : router(r), executor(e), metrics(m), options(std::move(o)) {}

  // State carried from the first callback to the reply.
  struct Exchange {
    http::http_request request;
    api::HttpRequest req;
    std::chrono::steady_clock::time_point started;
    std::vector<unsigned char> chunk;
  };

  void finish(const std::shared_ptr<Exchange>& ex, api::HttpResponse resp, bool close_connection = false) {
    resp = api::conditional_get(ex->req, std::move(resp));  // ETag on 200 GETs; 304 when the client has it
    bool head = ex->req.method == "HEAD";
    // A file body is streamed from disk in cpprestsdk's chunks, never held in memory whole.
    std::optional<concurrency::streams::istream> file;
    uint64_t file_size = 0;
    if (!resp.body_file.empty()) {
      std::error_code ec;
      file_size = std::filesystem::file_size(resp.body_file, ec);
      try {
        if (ec) throw std::runtime_error(ec.message());
        if (!head) file = concurrency::streams::file_stream<uint8_t>::open_istream(resp.body_file).get();
      } catch (const std::exception& e) {
        log_error("http", "cannot stream file", {{"path", resp.body_file}, {"error", e.what()}});
        resp = api::problem(api::ErrorKind::internal, "cannot open the file to stream it");
      }
    }
    http::http_response out(static_cast<http::status_code>(resp.status));
    for (const auto& [name, value] : resp.headers) out.headers().add(name, value);
    for (const auto& [name, value] : kSecurityHeaders) out.headers().add(name, value);
    out.headers().add("X-Request-Id", ex->req.request_id);
    // cpprestsdk knows nothing of HEAD: it writes Content-Length bytes from the body
    // stream. So a HEAD reply carries the GET's length over an empty stream, and the
    // connection closes after the headers (the library ends it when the stream runs dry).
    if (close_connection || head) out.headers().add("Connection", "close");
    if (head) {
      out.set_body(std::vector<unsigned char>());
      out.headers().set_content_length(resp.body_file.empty() ? resp.body.size() : file_size);
    } else if (file) {
      out.set_body(*file, file_size, resp.content_type);
    } else {
      out.set_body(std::vector<unsigned char>(resp.body.begin(), resp.body.end()));
    }
    if (!resp.content_type.empty()) out.headers().set_content_type(resp.content_type);
    else out.headers().remove(http::header_names::content_type);
    // Record before replying: once the client has the response, /metrics and the
    // access log must already count it.
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - ex->started).count();
    std::string route = router.route_of(ex->req.path);
    if (metrics) metrics->observe_request(ex->req.method, route, resp.status, seconds);
    if (options.access_log) {
      char duration[32];
      std::snprintf(duration, sizeof duration, "%.3f", seconds * 1000.0);
      log_info("http", "request",
               {{"method", ex->req.method}, {"route", route.empty() ? ex->req.path : route},
                {"status", std::to_string(resp.status)}, {"duration_ms", duration},
                {"request_id", ex->req.request_id}});
    }
    ex->request.reply(out).then([](pplx::task<void> t) {
      try {
        t.get();
      } catch (...) {  // client went away; nothing to do
      }
    });
  }

  // Stops cpprestsdk from buffering the rest of an oversized body: its reader
  // fails on the next write and the connection closes after our 413.
  static void abandon_body(http::http_request& request) {
    try {
      request._get_impl()->outstream().streambuf().close(
          std::ios_base::out, std::make_exception_ptr(std::runtime_error("request body over the limit")));
    } catch (...) {
    }
  }

  void too_large(const std::shared_ptr<Exchange>& ex) {
    abandon_body(ex->request);
    finish(ex,
           api::problem(api::ErrorKind::payload_too_large,
                        "request body exceeds the limit of " + std::to_string(options.max_body_bytes) + " bytes"),
           /*close_connection=*/true);
  }

  void dispatch(const std::shared_ptr<Exchange>& ex) {
    // OPTIONS only lists methods; inline routes never block (no database, no disk).
    if (ex->req.method == "OPTIONS" ||
        router.runs_inline(ex->req.method == "HEAD" ? "GET" : ex->req.method, ex->req.path)) {
      finish(ex, router.dispatch(ex->req));
      return;
    }
    if (auto fast = router.try_fast_path(ex->req)) {
      finish(ex, std::move(*fast));
      return;
    }
    bool queued = executor.try_submit([this, ex] { finish(ex, router.dispatch(ex->req)); });
    if (!queued) {
      api::HttpResponse busy = api::problem(api::ErrorKind::unavailable, "the server is saturated; retry shortly");
      busy.headers.emplace_back("Retry-After", "1");
      finish(ex, busy);
    }
  }

  void read_body(const std::shared_ptr<Exchange>& ex) {
    auto buffer = ex->request.body().streambuf();
    buffer.getn(ex->chunk.data(), ex->chunk.size()).then([this, ex](pplx::task<size_t> step) {
      size_t got = 0;
      try {
        got = step.get();
      } catch (const std::exception& e) {
        finish(ex, api::problem(api::ErrorKind::bad_request, std::string("could not read the body: ") + e.what()),
               true);
        return;
      }
      if (got == 0) {
        dispatch(ex);
        return;
      }
      if (ex->req.body.size() + got > options.max_body_bytes) {
        too_large(ex);
        return;
      }
      ex->req.body.append(reinterpret_cast<const char*>(ex->chunk.data()), got);
      read_body(ex);
    });
  }

  void handle(http::http_request request) {
    auto ex = std::make_shared<Exchange>();
    ex->started = std::chrono::steady_clock::now();
    ex->request = request;
    api::HttpRequest& req = ex->req;
    req.method = request.method();
    size_t header_bytes = 0;
    for (const auto& [name, value] : request.headers()) {
      std::string lower = name;
      for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      header_bytes += name.size() + value.size() + 4;
      req.headers[lower] = value;
    }
    std::string incoming_id = api::header(req, "x-request-id");
    req.request_id = valid_request_id(incoming_id) ? incoming_id
                                                   : id_prefix + "-" + std::to_string(next_request_id++);
    try {
      const auto& uri = request.relative_uri();
      req.path = web::uri::decode(uri.path());
      for (const auto& [key, value] : web::uri::split_query(uri.query())) {
        req.query[web::uri::decode(key)] = web::uri::decode(value);
      }
    } catch (const std::exception& e) {
      req.path = request.relative_uri().path();
      finish(ex, api::problem(api::ErrorKind::bad_request, std::string("malformed request URI: ") + e.what()), true);
      return;
    }
    if (header_bytes > options.max_header_bytes) {
      finish(ex,
             api::problem(api::ErrorKind::headers_too_large,
                          "request headers total " + std::to_string(header_bytes) + " bytes, over the limit of " +
                              std::to_string(options.max_header_bytes)),
             true);
      return;
    }
    // Content-Length says up front; chunked bodies are checked while reading.
    if (request.headers().has(http::header_names::content_length) &&
        request.headers().content_length() > options.max_body_bytes) {
      too_large(ex);
      return;
    }
    ex->chunk.resize(kReadStep);
    read_body(ex);
  }
};

HttpServer::HttpServer(const api::Router& router, api::BoundedExecutor& executor, api::Metrics* metrics,
                       HttpOptions options)
    : impl_(std::make_unique<Impl>(router, executor, metrics, std::move(options))) {}

HttpServer::~HttpServer() { stop(); }

void HttpServer::start() {
  std::string address = "http://" + impl_->options.host + ":" + std::to_string(impl_->options.port);
  // cpprestsdk's own default is 40 threads whatever the machine. On 2 cores that many
  // threads contending for one asio queue put the leaderboard's p99 at 64 connections
  // near 70 ms; 4 threads gave 12-15 ms at the same rate (docs/api.md, bench/api).
  size_t threads = impl_->options.threads > 0 ? static_cast<size_t>(impl_->options.threads)
                                              : default_http_threads();
  try {
    crossplat::threadpool::initialize_with_threads(threads);
  } catch (const std::exception&) {  // the pool exists already (a second listener in this process)
    log_warn("http", "cpprestsdk's thread pool was made before this listener; keeping its size",
             {{"requested_threads", std::to_string(threads)}});
  }
  impl_->listener = std::make_unique<http::experimental::listener::http_listener>(address);
  auto handle = [this](http::http_request request) { impl_->handle(std::move(request)); };
  impl_->listener->support(handle);
  // cpprestsdk answers OPTIONS and TRACE itself unless they have their own handler (and
  // its TRACE echoes the request, cookies and tokens included): route them like the rest.
  impl_->listener->support(http::methods::OPTIONS, handle);
  impl_->listener->support(http::methods::TRCE, handle);
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
