// Bearer-token authentication with scopes. Tokens look like "kf_<48 hex>"; only
// their sha256 is stored. admin implies submit. Reads need no token.
// Tested over HTTP in tests/server/api_core_test.cpp (scopes, revocation, hashing).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "api/http.h"
#include "common/sha256.h"  // sha256_hex: token, request-body and idempotency hashes

namespace kforge::api {

enum class Scope { none, submit, admin };

//! Who is calling: token id 0 means anonymous.
struct Principal {
  int64_t token_id = 0;
  std::vector<std::string> scopes;
  //! True when the scopes allow `scope` (admin implies submit; none always).
  bool allows(Scope scope) const;
  //! Key for per-caller records ("token:12" or "anonymous").
  std::string key() const;
};

//! A fresh random secret "kf_" + 48 hex digits.
std::string token_generate();
//! Parses "submit", "admin" or "submit,admin"; error message names the bad scope.
std::optional<std::string> parse_scopes(const std::string& text, std::vector<std::string>* scopes);

//! The token of an Authorization value "Bearer <token>" (scheme in any case, one or
//! more spaces), or "" when the value has another form.
std::string bearer_token(const std::string& header_value);

//! Either the caller or the error response to send (401 / 403).
struct AuthResult {
  std::optional<Principal> principal;
  std::optional<HttpResponse> error;
};

//! Checks the Authorization header against api_tokens and the required scope.
//! No header and Scope::none gives the anonymous principal.
AuthResult authenticate(pqxx::connection& conn, const HttpRequest& req, Scope required);

}  // namespace kforge::api
