// ApiServer behind api_fixture.h.
// Used by ctest -R 'api_(core|resources)_test|cli_test|jobs_(generate|training)_test'.
#include "tests/server/api_fixture.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tests/support/processes.h"

namespace kforge::test {

ApiServer::ApiServer(const std::vector<std::string>& extra_args) {
  port = free_port();
  // Generous: the probe starts libtorch, slow on a loaded 2-core machine.
  std::vector<std::string> args = {"--probe-timeout-s", "15"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  process = start_server(port, database.url(), args);
  admin = mint_token("admin");
  submit = mint_token("submit");
  auto doc = http_request(port, "GET", "/v1/openapi.json");
  openapi.load(doc.body);
}

std::string ApiServer::mint_token(const std::string& scope) {
  auto [code, output] = run_command({bin_path("kforge-server"), "token", "create", "--scope", scope, "--database-url",
                                     database.url(), "--log-level", "error"});
  EXPECT_EQ(code, 0) << output;
  while (!output.empty() && (output.back() == '\n' || output.back() == '\r')) output.pop_back();
  auto last_line = output.rfind('\n');
  return last_line == std::string::npos ? output : output.substr(last_line + 1);
}

void ApiServer::check(const std::string& method, const std::string& path, const RawResponse& resp) {
  std::string problem = openapi.check(method, path, resp.status, resp.headers.count("content-type") ?
                                      resp.headers.at("content-type") : "", resp.body);
  EXPECT_EQ(problem, "") << method << " " << path << " -> " << resp.status << " " << resp.body.substr(0, 400);
}

RawResponse ApiServer::get(const std::string& path, const std::string& token) {
  std::vector<std::string> headers;
  if (!token.empty()) headers.push_back("Authorization: Bearer " + token);
  auto resp = http_request(port, "GET", path, "", headers, 30);
  check("GET", path, resp);
  return resp;
}

RawResponse ApiServer::post(const std::string& path, const std::string& body, const std::string& token,
                            std::vector<std::string> headers) {
  if (!token.empty()) headers.push_back("Authorization: Bearer " + token);
  auto resp = http_request(port, "POST", path, body, headers, 30);
  check("POST", path, resp);
  return resp;
}

RawResponse ApiServer::del(const std::string& path, const std::string& token) {
  std::vector<std::string> headers;
  if (!token.empty()) headers.push_back("Authorization: Bearer " + token);
  auto resp = http_request(port, "DELETE", path, "", headers, 30);
  check("DELETE", path, resp);
  return resp;
}

bool healthy(int port) { return http_request(port, "GET", "/v1/health", "", {}, 5).status == 200; }

std::string ApiServer::log() const {
  std::ifstream in("/tmp/kforge-test-server-" + std::to_string(port) + ".log");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string sample_op(const std::string& name, const std::string& body) {
  nlohmann::json op = {
      {"name", name},
      {"source", "def forward(x: Tensor, y: Tensor) -> Tensor:\n    return " + body + "\n"},
      {"inputs",
       {{{"name", "x"}, {"shape", {64, 32}}, {"dtype", "float32"}, {"dist", "normal"}},
        {{"name", "y"}, {"shape", {64, 32}}, {"dtype", "float32"}, {"dist", "uniform"}}}},
      {"extra_shapes", {{{"x", {7, 5}}, {"y", {7, 5}}}}},
      {"tolerance", {{"atol", 1e-4}, {"rtol", 1e-4}}}};
  return op.dump();
}

}  // namespace kforge::test
