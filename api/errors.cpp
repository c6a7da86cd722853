// RFC 9457 problem details; every error response in kforge passes through problem().
// Test: ctest -R 'api_(router|core)_test'.
#include "api/errors.h"

#include <nlohmann/json.hpp>

namespace kforge::api {
namespace {

struct KindInfo {
  int status;
  const char* title;
  const char* slug;
};

KindInfo info(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::bad_request: return {400, "Bad Request", "bad-request"};
    case ErrorKind::unauthorized: return {401, "Unauthorized", "unauthorized"};
    case ErrorKind::forbidden: return {403, "Forbidden", "forbidden"};
    case ErrorKind::not_found: return {404, "Not Found", "not-found"};
    case ErrorKind::method_not_allowed: return {405, "Method Not Allowed", "method-not-allowed"};
    case ErrorKind::conflict: return {409, "Conflict", "conflict"};
    case ErrorKind::payload_too_large: return {413, "Payload Too Large", "payload-too-large"};
    case ErrorKind::headers_too_large: return {431, "Request Header Fields Too Large", "headers-too-large"};
    case ErrorKind::unprocessable: return {422, "Unprocessable Content", "validation-error"};
    case ErrorKind::unavailable: return {503, "Service Unavailable", "unavailable"};
    case ErrorKind::internal: return {500, "Internal Server Error", "internal"};
  }
  return {500, "Internal Server Error", "internal"};
}

}  // namespace

int status_for(ErrorKind kind) { return info(kind).status; }

std::string title_for(ErrorKind kind) { return info(kind).title; }

HttpResponse problem(ErrorKind kind, const std::string& detail, const std::vector<FieldError>& fields) {
  KindInfo k = info(kind);
  nlohmann::json body = {
      {"type", std::string("https://kforge.dev/problems/") + k.slug},
      {"title", k.title},
      {"status", k.status},
      {"detail", detail},
  };
  if (!fields.empty()) {
    auto& errors = body["errors"] = nlohmann::json::array();
    for (const auto& f : fields) errors.push_back({{"field", f.field}, {"message", f.message}});
  }
  HttpResponse resp;
  resp.status = k.status;
  resp.content_type = "application/problem+json";
  // Details may quote user bytes (invalid UTF-8 in a bad body): replace, never throw.
  resp.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return resp;
}

}  // namespace kforge::api
