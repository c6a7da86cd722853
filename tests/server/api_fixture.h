// Shared by the API system tests: a fresh database, the real kforge-server on a
// free port, an admin and a submit token minted with `kforge-server token create`,
// request helpers, and the OpenAPI response check (openapi_check.h).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/subprocess.h"
#include "tests/server/openapi_check.h"
#include "tests/support/http_client.h"
#include "tests/support/test_db.h"

namespace kforge::test {

//! One running server with tokens; every response can be checked against /v1/openapi.json.
class ApiServer {
 public:
  explicit ApiServer(const std::vector<std::string>& extra_args = {});
  //! Mints a token through the real CLI command; returns the secret.
  std::string mint_token(const std::string& scope);
  //! GET with an optional token; the response is checked against the OpenAPI document.
  RawResponse get(const std::string& path, const std::string& token = "");
  //! POST a body with an optional token and extra headers; checked against the document.
  RawResponse post(const std::string& path, const std::string& body, const std::string& token = "",
                   std::vector<std::string> headers = {});
  //! DELETE with an optional token; checked against the document.
  RawResponse del(const std::string& path, const std::string& token = "");
  //! Server log so far (access log lines, errors).
  std::string log() const;

  TestDatabase database;
  int port = 0;
  Subprocess process;
  std::string admin;
  std::string submit;
  OpenApiCheck openapi;

 private:
  void check(const std::string& method, const std::string& path, const RawResponse& resp);
};

//! True when GET /v1/health on 127.0.0.1:port answers 200 within 5 s.
bool healthy(int port);

//! The op from DESIGN.md (silu * y), small shapes; `name` varies it.
std::string sample_op(const std::string& name = "silu_mul", const std::string& body = "F.silu(x) * y");

}  // namespace kforge::test
