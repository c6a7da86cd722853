// Token hashing, minting and checking behind api/auth.h.
// Test: ctest -R api_core_test (scopes, revocation and hashed tokens over HTTP).
#include "api/auth.h"

#include <openssl/rand.h>

#include <cctype>
#include <stdexcept>

#include "api/errors.h"
#include "common/sha256.h"
#include "db/tokens.h"

namespace kforge::api {
namespace {

std::string to_hex(const unsigned char* data, size_t size) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(size * 2);
  for (size_t byte_idx = 0; byte_idx < size; ++byte_idx) {
    out += digits[data[byte_idx] >> 4];
    out += digits[data[byte_idx] & 0xf];
  }
  return out;
}

const char* scope_name(Scope scope) {
  switch (scope) {
    case Scope::none: return "";
    case Scope::submit: return "submit";
    case Scope::admin: return "admin";
  }
  return "";
}

}  // namespace

std::string bearer_token(const std::string& header_value) {
  // RFC 9110 11.1: the scheme is case-insensitive, followed by one or more spaces.
  const std::string scheme = "bearer";
  if (header_value.size() <= scheme.size()) return "";
  for (size_t pos = 0; pos < scheme.size(); ++pos) {
    if (std::tolower(static_cast<unsigned char>(header_value[pos])) != scheme[pos]) return "";
  }
  size_t start = header_value.find_first_not_of(' ', scheme.size());
  if (start == scheme.size() || start == std::string::npos) return "";
  size_t end = header_value.find_last_not_of(" \t");
  return header_value.substr(start, end + 1 - start);
}

bool Principal::allows(Scope scope) const {
  if (scope == Scope::none) return true;
  for (const auto& have : scopes) {
    if (have == "admin") return true;
    if (have == scope_name(scope)) return true;
  }
  return false;
}

std::string Principal::key() const { return token_id ? "token:" + std::to_string(token_id) : "anonymous"; }

std::string token_generate() {
  unsigned char bytes[24];
  if (RAND_bytes(bytes, sizeof bytes) != 1) {
    throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": RAND_bytes failed");
  }
  return "kf_" + to_hex(bytes, sizeof bytes);
}

std::optional<std::string> parse_scopes(const std::string& text, std::vector<std::string>* scopes) {
  scopes->clear();
  for (const auto& scope : db::split_csv(text)) {
    if (scope != "submit" && scope != "admin") {
      return "unknown scope '" + scope + "' (expected submit or admin)";
    }
    scopes->push_back(scope);
  }
  if (scopes->empty()) return std::string("at least one scope is required (submit or admin)");
  return std::nullopt;
}

AuthResult authenticate(pqxx::connection& conn, const HttpRequest& req, Scope required) {
  std::string header_value = header(req, "authorization");
  if (header_value.empty()) {
    if (required == Scope::none) return {Principal{}, std::nullopt};
    HttpResponse resp = problem(ErrorKind::unauthorized,
                                std::string("this endpoint needs a token with scope '") + scope_name(required) +
                                    "': send Authorization: Bearer <token>");
    resp.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"kforge\"");
    return {std::nullopt, resp};
  }
  std::string token = bearer_token(header_value);
  if (token.empty()) {
    HttpResponse resp = problem(ErrorKind::unauthorized, "Authorization must be 'Bearer <token>'");
    resp.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"kforge\", error=\"invalid_request\"");
    return {std::nullopt, resp};
  }
  auto record = db::token_find(conn, sha256_hex(token));
  if (!record) {
    HttpResponse resp = problem(ErrorKind::unauthorized, "the token is unknown or revoked");
    resp.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"kforge\", error=\"invalid_token\"");
    return {std::nullopt, resp};
  }
  Principal principal{record->id, record->scopes};
  if (!principal.allows(required)) {
    return {std::nullopt, problem(ErrorKind::forbidden, std::string("the token lacks scope '") + scope_name(required) +
                                                            "' needed here")};
  }
  return {principal, std::nullopt};
}

}  // namespace kforge::api
