// HTTP client for the kforge CLI: base URL from KFORGE_URL, bearer token from
// KFORGE_TOKEN. Built on cpprestsdk's http_client. Tested by ctest -R cli_test.
#pragma once

#include <string>

namespace kforge::cli {

//! A response as the CLI needs it.
struct ClientResponse {
  int status = 0;
  std::string body;
};

class Client {
 public:
  Client(std::string base_url, std::string token);
  //! Sends a request; throws std::runtime_error when the server cannot be reached.
  ClientResponse request(const std::string& method, const std::string& path, const std::string& body = "");

 private:
  std::string base_url_;
  std::string token_;
};

}  // namespace kforge::cli
