// Requests an attacker or a careless client sends, against the real kforge-server
// (issue 18): HEAD and OPTIONS/TRACE on every kind of route, security headers,
// directory paths, NUL characters and invalid UTF-8 in bodies, paths, queries and
// cursors, unknown fields inside an inline op, the Authorization scheme's case, bad
// Idempotency-Keys. The server must answer each with a documented status and stay up.
// Run: scripts/test.sh build -R api_hostile
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/server/api_fixture.h"
#include "tests/support/http_client.h"

using kforge::test::ApiServer;
using kforge::test::healthy;
using kforge::test::http_raw;
using kforge::test::http_request;
using nlohmann::json;

namespace {

// The first field error of a problem body ("" if none).
std::string first_field(const std::string& body) {
  auto problem = json::parse(body, nullptr, false);
  if (!problem.is_object() || !problem.contains("errors") || problem["errors"].empty()) return "";
  return problem["errors"][0].value("field", "");
}

}  // namespace

TEST(ApiHostile, HeadNeverKillsTheServerAndReportsTheGetLength) {
  KFORGE_REQUIRE_DB();
  ApiServer server;
  // A model with one file, for the streamed-file route.
  auto dir = std::filesystem::temp_directory_path() / ("kforge-hostile-model-" + std::to_string(server.port));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << R"({"model_type": "qwen2", "hidden_size": 8})";
  auto model = server.post("/v1/models", json{{"name", "head-model"}, {"path", dir.string()}}.dump(), server.admin);
  ASSERT_EQ(model.status, 201) << model.body;
  std::string file_path = "/v1/models/" + std::to_string(json::parse(model.body)["id"].get<int64_t>()) +
                          "/files/config.json";

  for (std::string path : {"/v1/health", "/", "/index.html", "/nonexistent", "/v1/nonexistent", "/v1/ops",
                           "/v1/ops/999999", "/v1/openapi.json", "/v1/leaderboard/ops", "/metrics", "/v1/ready"}) {
    auto get = http_request(server.port, "GET", path);
    auto head = http_request(server.port, "HEAD", path);
    ASSERT_EQ(head.status, get.status) << path;
    EXPECT_EQ(head.body, "") << path << ": a HEAD reply has no body";
    if (path != "/metrics" && path != "/v1/leaderboard/ops") {  // these change between the two requests
      EXPECT_EQ(head.headers["content-length"], std::to_string(get.body.size())) << path;
    }
    EXPECT_EQ(head.headers["content-type"], get.headers["content-type"]) << path;
    ASSERT_TRUE(healthy(server.port)) << "HEAD " << path << " took the server down";
  }
  auto file_head = http_request(server.port, "HEAD", file_path, "", {"Authorization: Bearer " + server.submit});
  EXPECT_EQ(file_head.status, 200);
  EXPECT_EQ(file_head.headers["content-length"], std::to_string(std::filesystem::file_size(dir / "config.json")));
  EXPECT_EQ(file_head.body, "");

  // A keep-alive client: HEAD then GET on one connection. The server says it closes
  // after the HEAD (cpprestsdk cannot send a HEAD reply and keep the connection).
  std::string two = http_raw(server.port,
                             "HEAD /v1/health HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n", 5);
  EXPECT_EQ(two.rfind("HTTP/1.1 200", 0), 0u) << two;
  EXPECT_NE(two.find("Connection: close"), std::string::npos) << two;
  EXPECT_TRUE(healthy(server.port));
  EXPECT_TRUE(server.process.running());
  std::filesystem::remove_all(dir);
}

TEST(ApiHostile, EveryMethodGetsADocumentedStatus) {
  KFORGE_REQUIRE_DB();
  ApiServer server;
  auto options = http_request(server.port, "OPTIONS", "/v1/ops");
  EXPECT_EQ(options.status, 200);
  EXPECT_EQ(options.headers["allow"], "POST, GET, HEAD, OPTIONS");
  EXPECT_EQ(options.headers["content-length"], "0");
  EXPECT_EQ(http_request(server.port, "OPTIONS", "/v1/health").headers["allow"], "GET, HEAD, OPTIONS");
  EXPECT_EQ(http_request(server.port, "OPTIONS", "/").headers["allow"], "GET, HEAD, OPTIONS");
  EXPECT_EQ(http_request(server.port, "OPTIONS", "/v1/nothing").status, 404);
  for (std::string method : {"TRACE", "PUT", "PATCH", "DELETE", "CONNECT", "FOO"}) {
    auto resp = http_request(server.port, method, "/v1/health");
    EXPECT_EQ(resp.status, 405) << method;
    EXPECT_EQ(resp.headers["allow"], "GET") << method;
    EXPECT_EQ(resp.body.find("TRACE /v1/health HTTP"), std::string::npos) << "TRACE must not echo the request";
    EXPECT_EQ(http_request(server.port, method, "/").status, 405) << method << " on a static file";
    EXPECT_EQ(http_request(server.port, method, "/no-such-file").status, 404) << method;
  }
  EXPECT_TRUE(healthy(server.port));
}

TEST(ApiHostile, SecurityHeadersOnEveryResponse) {
  KFORGE_REQUIRE_DB();
  ApiServer server;
  for (auto [method, path] : std::vector<std::pair<std::string, std::string>>{
           {"GET", "/"}, {"GET", "/v1/health"}, {"GET", "/v1/nothing"}, {"HEAD", "/"}, {"POST", "/v1/ops"},
           {"OPTIONS", "/v1/ops"}, {"TRACE", "/"}, {"GET", "/v1/leaderboard/ops"}}) {
    auto resp = http_request(server.port, method, path);
    std::string csp = resp.headers["content-security-policy"];
    EXPECT_NE(csp.find("default-src 'self'"), std::string::npos) << method << " " << path;
    EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos) << method << " " << path;
    EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos);
    EXPECT_EQ(resp.headers["x-content-type-options"], "nosniff") << method << " " << path;
    EXPECT_EQ(resp.headers["x-frame-options"], "DENY") << method << " " << path;
    EXPECT_EQ(resp.headers["referrer-policy"], "no-referrer") << method << " " << path;
  }
}

TEST(ApiHostile, DirectoriesAndDotPathsAreNotFiles) {
  KFORGE_REQUIRE_DB();
  ApiServer server;
  for (std::string path : {"/.", "/./", "/js", "/%2e", "/..", "/%2e%2e/etc/passwd", "/.%2e/x"}) {
    auto resp = http_request(server.port, "GET", path);
    EXPECT_TRUE(resp.status == 404 || resp.status == 400) << path << " -> " << resp.status;
    EXPECT_FALSE(resp.status == 200 && resp.body.empty()) << path << " is an empty 200";
  }
  EXPECT_EQ(http_request(server.port, "GET", "/").status, 200);
}

TEST(ApiHostile, NulAndInvalidUtf8AreRefusedNamingTheField) {
  KFORGE_REQUIRE_DB();
  ApiServer server;
  auto expect_field = [&](const std::string& path, const json& body, const std::string& field,
                          const std::string& token) {
    auto resp = server.post(path, body.dump(), token);
    EXPECT_EQ(resp.status, 422) << path << " " << resp.body;
    EXPECT_EQ(first_field(resp.body), field) << resp.body;
    EXPECT_NE(resp.body.find("NUL"), std::string::npos) << resp.body;
  };
  expect_field("/v1/training-jobs", {{"method", "sft"}, {"dataset", std::string("data\0.jsonl", 11)}}, "dataset",
               server.submit);
  json op = json::parse(kforge::test::sample_op("nul_op"));
  op["source"] = std::string("def forward(x: Tensor, y: Tensor) -> Tensor:\n    return x\0 * y\n", 63);
  auto started = std::chrono::steady_clock::now();
  expect_field("/v1/ops", op, "source", server.submit);
  expect_field("/v1/generations", {{"op", op}}, "op.source", server.submit);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5)) << "refused before the probe ran";
  expect_field("/v1/tokens", {{"name", std::string("a\0b", 3)}, {"scopes", {"submit"}}}, "name", server.admin);
  expect_field("/v1/models", {{"name", "m"}, {"path", "/tmp"}, {"config", {{"note", std::string("x\0", 2)}}}},
               "config.note", server.admin);
  expect_field("/v1/generations", {{"op_id", 1}, {"model", std::string("kforge-tiny\0", 12)}}, "model", server.submit);
  expect_field("/v1/evaluations", {{"model", "m@1"}, {"suite", std::string("held\0out", 8)}}, "suite", server.submit);

  // Raw invalid UTF-8 inside a JSON string is malformed JSON: 400.
  auto bad_utf8 = server.post("/v1/tokens", std::string("{\"name\": \"\xff\xfe\", \"scopes\": [\"submit\"]}"),
                              server.admin);
  EXPECT_EQ(bad_utf8.status, 400);
  // Paths, queries and cursors reach PostgreSQL as text too.
  for (std::string path : {"/v1/leaderboard/ops?target=%00", "/v1/leaderboard/ops?target=%ff",
                           "/v1/leaderboard/models?suite=a%00b", "/v1/jobs?kind=%c3%28", "/v1/ops/1%00",
                           "/v1/generations?status=%00", "/v1/leaderboard/ops?after=3100" /* "1\0" as a cursor */,
                           "/v1/leaderboard/ops?after=31ff1f1f", "/v1/%ff"}) {
    auto resp = http_request(server.port, "GET", path);
    EXPECT_TRUE(resp.status == 400 || resp.status == 404) << path << " -> " << resp.status << " " << resp.body;
  }
  EXPECT_TRUE(healthy(server.port));
  EXPECT_EQ(server.log().find("handler failed"), std::string::npos) << "a handler threw: " << server.log();
}

TEST(ApiHostile, UnknownFieldsInsideAnInlineOpAre422) {
  KFORGE_REQUIRE_DB();
  ApiServer server;
  json op = json::parse(kforge::test::sample_op("strict_op"));
  op["colour"] = "blue";
  auto top = server.post("/v1/generations", json{{"op", op}}.dump(), server.submit);
  EXPECT_EQ(top.status, 422) << top.body;
  EXPECT_EQ(first_field(top.body), "op.colour") << top.body;
  op.erase("colour");
  op["inputs"][0]["stride"] = 2;
  auto nested = server.post("/v1/ops", op.dump(), server.submit);
  EXPECT_EQ(nested.status, 422) << nested.body;
  EXPECT_EQ(first_field(nested.body), "inputs[0].stride") << nested.body;
  op["inputs"][0].erase("stride");
  op["tolerance"]["eps"] = 1;
  EXPECT_EQ(first_field(server.post("/v1/ops", op.dump(), server.submit).body), "tolerance.eps");
}

TEST(ApiHostile, BearerSchemeIsCaseInsensitive) {
  KFORGE_REQUIRE_DB();
  ApiServer server;
  for (std::string scheme : {"Bearer ", "bearer ", "BEARER ", "bEaReR  "}) {
    auto resp = http_request(server.port, "GET", "/v1/workers", "", {"Authorization: " + scheme + server.admin});
    EXPECT_EQ(resp.status, 200) << scheme;
  }
  for (std::string value : std::vector<std::string>{"Basic " + server.admin, "Bearer", "Bearer ", "Bearer" + server.admin,
                                                   "Token x"}) {
    EXPECT_EQ(http_request(server.port, "GET", "/v1/workers", "", {"Authorization: " + value}).status, 401) << value;
  }
}

TEST(ApiHostile, IdempotencyKeyMustBePrintableAscii) {
  KFORGE_REQUIRE_DB();
  ApiServer server;
  json body = {{"name", "idem"}, {"scopes", {"submit"}}};
  auto bad = http_request(server.port, "POST", "/v1/tokens", body.dump(),
                          {"Authorization: Bearer " + server.admin, "Idempotency-Key: caf\xc3\xa9"});
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_EQ(first_field(bad.body), "Idempotency-Key");
  auto good = http_request(server.port, "POST", "/v1/tokens", body.dump(),
                           {"Authorization: Bearer " + server.admin, "Idempotency-Key: k 1"});
  EXPECT_EQ(good.status, 201) << good.body;
}
