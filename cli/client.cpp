// cpprestsdk-backed client behind cli/client.h.
// Tested through the real server by tests/cli/cli_test.cpp (ctest -R cli_test).
#include "cli/client.h"

#include <stdexcept>

#include <cpprest/http_client.h>

namespace kforge::cli {

Client::Client(std::string base_url, std::string token) : base_url_(std::move(base_url)), token_(std::move(token)) {}

ClientResponse Client::request(const std::string& method, const std::string& path, const std::string& body) {
  try {
    // Submitting an op waits for its sandboxed sample run, so allow more than the 30 s default.
    web::http::client::http_client_config config;
    config.set_timeout(std::chrono::seconds(120));
    web::http::client::http_client client(base_url_, config);
    web::http::http_request req(method);
    req.set_request_uri(path);
    if (!token_.empty()) req.headers().add("Authorization", "Bearer " + token_);
    if (!body.empty()) req.set_body(body, "application/json");
    auto resp = client.request(req).get();
    auto data = resp.extract_vector().get();
    return {resp.status_code(), std::string(data.begin(), data.end())};
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot reach kforge at " + base_url_ + ": " + e.what());
  }
}

}  // namespace kforge::cli
