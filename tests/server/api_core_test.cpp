// The real kforge-server over real HTTP: auth and scopes, tokens stored hashed,
// Idempotency-Key, body limits (Content-Length and chunked), header limit, the
// bad-input suite, executor saturation (503 + Retry-After), /metrics, access
// log, request ids, 404/405, and the OpenAPI document against the router.
// Run: scripts/test.sh build -R api_core
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "common/sha256.h"
#include "api/routes/routes.h"
#include "api/system_routes.h"
#include "db/connection.h"
#include "tests/server/api_fixture.h"
#include "tests/support/http_client.h"
#include "tests/support/processes.h"

using namespace std::chrono_literals;
using kforge::test::ApiServer;
using kforge::test::healthy;
using kforge::test::http_raw;
using kforge::test::http_request;
using nlohmann::json;

namespace {

std::string generation_body(int samples = 4) {
  return json{{"op", json::parse(kforge::test::sample_op())}, {"samples", samples}}.dump();
}

}  // namespace

TEST(ApiCore, AuthScopesAndHashedTokens) {
  KFORGE_REQUIRE_DB();
  ApiServer server;
  auto anonymous = server.post("/v1/generations", generation_body());
  EXPECT_EQ(anonymous.status, 401);
  EXPECT_EQ(anonymous.headers["content-type"], "application/problem+json");
  EXPECT_NE(anonymous.headers["www-authenticate"].find("Bearer"), std::string::npos);
  EXPECT_EQ(server.post("/v1/generations", generation_body(), "kf_not_a_real_token").status, 401);
  auto basic = http_request(server.port, "GET", "/v1/workers", "", {"Authorization: Basic YWJjOmRlZg=="});
  EXPECT_EQ(basic.status, 401);
  EXPECT_NE(basic.body.find("Bearer"), std::string::npos);

  EXPECT_EQ(server.get("/v1/workers").status, 401);
  EXPECT_EQ(server.get("/v1/workers", server.submit).status, 403) << "workers need admin";
  EXPECT_EQ(server.get("/v1/workers", server.admin).status, 200);
  EXPECT_EQ(server.get("/v1/leaderboard/ops").status, 200) << "leaderboards are public";
  EXPECT_EQ(server.get("/v1/ops").status, 200) << "ops are public";

  // Admin mints a submit token over the API; the secret is shown once and stored hashed.
  auto created = server.post("/v1/tokens", R"({"name": "ci", "scopes": ["submit"]})", server.admin);
  ASSERT_EQ(created.status, 201) << created.body;
  std::string secret = json::parse(created.body)["token"];
  int64_t token_id = json::parse(created.body)["id"];
  EXPECT_EQ(server.post("/v1/tokens", R"({"scopes": ["root"]})", server.admin).status, 422);
  EXPECT_EQ(server.post("/v1/tokens", R"({"scopes": ["submit"]})", server.submit).status, 403);
  auto listed = server.get("/v1/tokens", server.admin);
  EXPECT_EQ(listed.body.find(secret), std::string::npos) << "token list must not reveal secrets";
  {
    auto conn = kforge::db::connect(server.database.url());
    pqxx::read_transaction txn(*conn);
    EXPECT_EQ(txn.exec_params1("SELECT count(*) FROM api_tokens WHERE token_sha256 = $1",
                               kforge::sha256_hex(secret))[0].as<int>(), 1);
    EXPECT_EQ(txn.exec_params1("SELECT count(*) FROM api_tokens WHERE token_sha256 = $1 OR prefix = $1", secret)[0]
                  .as<int>(), 0);
  }
  EXPECT_EQ(server.post("/v1/generations", generation_body(), secret).status, 202);
  EXPECT_EQ(server.post("/v1/tokens/" + std::to_string(token_id) + "/revoke", "", server.admin).status, 200);
  EXPECT_EQ(server.post("/v1/generations", generation_body(), secret).status, 401) << "revoked token still works";
  EXPECT_EQ(server.post("/v1/tokens/" + std::to_string(token_id) + "/revoke", "", server.admin).status, 404);

  auto [code, output] = kforge::run_command({kforge::test::bin_path("kforge-server"), "token", "create", "--scope",
                                             "root", "--database-url", server.database.url()});
  EXPECT_EQ(code, 2);
  EXPECT_NE(output.find("unknown scope 'root'"), std::string::npos) << output;
}

TEST(ApiCore, IdempotencyKeyReplaysOrRefuses) {
  KFORGE_REQUIRE_DB();
  ApiServer server;
  std::string body = generation_body(3);
  auto first = server.post("/v1/generations", body, server.submit, {"Idempotency-Key: abc-1"});
  ASSERT_EQ(first.status, 202) << first.body;
  auto again = server.post("/v1/generations", body, server.submit, {"Idempotency-Key: abc-1"});
  EXPECT_EQ(again.status, 202);
  EXPECT_EQ(again.body, first.body);
  EXPECT_EQ(again.headers["idempotent-replayed"], "true");
  auto different = server.post("/v1/generations", generation_body(5), server.submit, {"Idempotency-Key: abc-1"});
  EXPECT_EQ(different.status, 422);
  EXPECT_NE(different.body.find("different request body"), std::string::npos);
  auto other_key = server.post("/v1/generations", body, server.submit, {"Idempotency-Key: abc-2"});
  ASSERT_EQ(other_key.status, 202);
  EXPECT_NE(json::parse(other_key.body)["id"], json::parse(first.body)["id"]);
  auto too_long = server.post("/v1/generations", body, server.submit, {"Idempotency-Key: " + std::string(300, 'k')});
  EXPECT_EQ(too_long.status, 400);
  // Another caller's identical key is a different record.
  auto admin_same_key = server.post("/v1/generations", body, server.admin, {"Idempotency-Key: abc-1"});
  ASSERT_EQ(admin_same_key.status, 202);
  EXPECT_NE(json::parse(admin_same_key.body)["id"], json::parse(first.body)["id"]);
  auto jobs = json::parse(server.get("/v1/generations?limit=100").body);
  EXPECT_EQ(jobs["data"].size(), 3u) << "exactly three jobs were created";
}

TEST(ApiCore, BodyLimitFromContentLengthAndWhileReadingChunks) {
  KFORGE_REQUIRE_DB();
  ApiServer server({"--max-body-bytes", "4096"});
  std::string big(5000, ' ');
  auto declared = http_request(server.port, "POST", "/v1/generations", big, {"Authorization: Bearer " + server.submit});
  EXPECT_EQ(declared.status, 413);
  EXPECT_EQ(declared.headers["content-type"], "application/problem+json");

  auto chunked = [&](size_t total, size_t chunk) {
    std::string req = "POST /v1/generations HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json"
                      "\r\nAuthorization: Bearer " + server.submit + "\r\nTransfer-Encoding: chunked\r\n\r\n";
    std::string payload = generation_body(2);
    payload.resize(std::max(total, payload.size()), ' ');  // trailing spaces keep the JSON valid
    for (size_t pos = 0; pos < payload.size(); pos += chunk) {
      std::string piece = payload.substr(pos, chunk);
      char size_line[32];
      std::snprintf(size_line, sizeof size_line, "%zx\r\n", piece.size());
      req += size_line + piece + "\r\n";
    }
    req += "0\r\n\r\n";
    return http_raw(server.port, req, 20);
  };
  std::string small = chunked(1000, 300);
  EXPECT_EQ(small.rfind("HTTP/1.1 202", 0), 0u) << small.substr(0, 300);
  std::string over = chunked(6000, 1000);
  EXPECT_EQ(over.rfind("HTTP/1.1 413", 0), 0u) << over.substr(0, 300);

  // 10 MB, both ways; the server answers 413 and stays up.
  std::string ten_mb(10 << 20, 'x');
  EXPECT_EQ(http_request(server.port, "POST", "/v1/ops", ten_mb, {}, 30).status, 413);
  std::string huge_chunked = chunked(10 << 20, 1 << 16);
  EXPECT_EQ(huge_chunked.rfind("HTTP/1.1 413", 0), 0u) << huge_chunked.substr(0, 200);
  EXPECT_TRUE(healthy(server.port));
}

TEST(ApiCore, OversizedHeadersAre431) {
  KFORGE_REQUIRE_DB();
  ApiServer server;
  auto resp = http_request(server.port, "GET", "/v1/ops", "", {"X-Filler: " + std::string(20000, 'a')});
  EXPECT_EQ(resp.status, 431);
  EXPECT_TRUE(healthy(server.port));
}

TEST(ApiCore, BadInputSuiteGetsClearErrorsAndTheServerStaysUp) {
  KFORGE_REQUIRE_DB();
  ApiServer server;
  auto post_op = [&](const std::string& body) { return server.post("/v1/ops", body, server.submit); };
  auto fields_of = [](const kforge::test::RawResponse& resp) {
    std::string out;
    for (const auto& error : json::parse(resp.body).value("errors", json::array())) {
      out += error["field"].get<std::string>() + ";";
    }
    return out;
  };

  auto truncated = post_op(R"js({"name": "x", "source": "def forward(x)")js");
  EXPECT_EQ(truncated.status, 400);
  EXPECT_NE(truncated.body.find("not valid JSON"), std::string::npos);

  auto wrong_types = server.post("/v1/generations", R"({"op_id": "seven", "samples": "many", "target": 3})",
                                 server.submit);
  EXPECT_EQ(wrong_types.status, 422);
  EXPECT_EQ(fields_of(wrong_types), "op_id;target;samples;") << wrong_types.body;

  auto huge = server.post("/v1/generations", R"({"op_id": 1, "samples": 123456789012345678901234567890})",
                          server.submit);
  EXPECT_EQ(huge.status, 422);
  EXPECT_NE(fields_of(huge).find("samples"), std::string::npos);
  EXPECT_EQ(server.post("/v1/generations", R"({"op_id": 1e999})", server.submit).status, 400);

  auto unicode_name = post_op(kforge::test::sample_op("sïlu_😀"));
  EXPECT_EQ(unicode_name.status, 422);
  EXPECT_NE(fields_of(unicode_name).find("name"), std::string::npos) << unicode_name.body;
  auto unicode_comment = post_op(kforge::test::sample_op("silu_unicode", "x * y  # größer ✓"));
  EXPECT_EQ(unicode_comment.status, 201) << unicode_comment.body;

  std::string nested(5000, '[');
  auto deep = post_op("{\"name\": " + nested + std::string(5000, ']') + "}");
  EXPECT_EQ(deep.status, 400);
  EXPECT_NE(deep.body.find("nesting depth"), std::string::npos);

  auto syntax = post_op(kforge::test::sample_op("broken", "x +* y)"));
  EXPECT_EQ(syntax.status, 422);
  EXPECT_NE(syntax.body.find("line 2"), std::string::npos) << syntax.body;
  EXPECT_EQ(fields_of(syntax), "source;");

  auto loops = post_op(json{{"name", "spin"},
                            {"source", "def forward(x: Tensor) -> Tensor:\n    while True:\n        x = x + 1\n    return x\n"},
                            {"inputs", {{{"name", "x"}, {"shape", {4}}}}}}.dump());
  EXPECT_EQ(loops.status, 422);
  EXPECT_NE(loops.body.find("timeout"), std::string::npos) << loops.body;
  EXPECT_TRUE(healthy(server.port));

  auto hog = post_op(json{{"name", "hog"},
                          {"source", "def forward(x: Tensor) -> Tensor:\n    return torch.ones([100000, 250000]) + x.sum()\n"},
                          {"inputs", {{{"name", "x"}, {"shape", {4}}}}}}.dump());
  EXPECT_EQ(hog.status, 422);
  EXPECT_NE(hog.body.find("allocate"), std::string::npos) << hog.body;

  auto not_object = post_op("[1, 2, 3]");
  EXPECT_EQ(not_object.status, 400);
  EXPECT_EQ(post_op("").status, 400);
  auto garbage = http_raw(server.port, "GARBAGE\r\n\r\n", 5);
  EXPECT_TRUE(healthy(server.port));
  auto ten_mb_json = http_request(server.port, "POST", "/v1/ops", "\"" + std::string(10 << 20, 'a') + "\"",
                                  {"Authorization: Bearer " + server.submit}, 30);
  EXPECT_EQ(ten_mb_json.status, 413);
  EXPECT_TRUE(healthy(server.port));
}

TEST(ApiCore, SaturatedExecutorAnswers503WithRetryAfter) {
  KFORGE_REQUIRE_DB();
  ApiServer server({"--executor-threads", "1", "--max-queue", "1"});
  // A looping op holds the only executor thread for the probe's 15 s limit.
  std::string spin = json{{"name", "spin"},
                          {"source", "def forward(x: Tensor) -> Tensor:\n    while True:\n        x = x + 1\n    return x\n"},
                          {"inputs", {{{"name", "x"}, {"shape", {4}}}}}}.dump();
  auto holder = std::async(std::launch::async, [&] {
    return http_request(server.port, "POST", "/v1/ops", spin, {"Authorization: Bearer " + server.submit}, 30);
  });
  std::this_thread::sleep_for(1000ms);
  auto waiting = std::async(std::launch::async, [&] { return http_request(server.port, "GET", "/v1/ops", "", {}, 30); });
  std::this_thread::sleep_for(300ms);
  auto refused = http_request(server.port, "GET", "/v1/ops");
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_EQ(refused.headers["retry-after"], "1");
  EXPECT_TRUE(healthy(server.port)) << "health runs inline and must not queue";
  EXPECT_EQ(holder.get().status, 422);
  EXPECT_EQ(waiting.get().status, 200) << "the queued request runs once the thread frees";
  auto metrics = http_request(server.port, "GET", "/metrics").body;
  EXPECT_NE(metrics.find("kforge_executor_rejected_total 1"), std::string::npos) << metrics;
}

TEST(ApiCore, MetricsAccessLogRequestIdsAndRouting) {
  KFORGE_REQUIRE_DB();
  ApiServer server;
  EXPECT_EQ(server.get("/v1/ops/424242").status, 404);
  ASSERT_EQ(server.post("/v1/generations", generation_body(), server.submit).status, 202);
  auto traced = http_request(server.port, "GET", "/v1/health", "", {"X-Request-Id: trace-me-42"});
  EXPECT_EQ(traced.headers["x-request-id"], "trace-me-42");
  auto generated = http_request(server.port, "GET", "/v1/health");
  EXPECT_FALSE(generated.headers["x-request-id"].empty());
  auto injected = http_request(server.port, "GET", "/v1/health", "", {"X-Request-Id: bad id\"x"});
  EXPECT_NE(injected.headers["x-request-id"], "bad id\"x") << "unsafe ids are replaced";

  auto metrics = http_request(server.port, "GET", "/metrics");
  ASSERT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.headers["content-type"].find("text/plain"), std::string::npos);
  EXPECT_NE(metrics.body.find("kforge_http_requests_total{method=\"GET\",route=\"/v1/ops/{id}\",status=\"404\"} 1"),
            std::string::npos)
      << metrics.body;
  EXPECT_NE(metrics.body.find("kforge_http_request_duration_seconds_bucket{route=\"/v1/generations\",le=\"+Inf\"} 1"),
            std::string::npos)
      << metrics.body;
  EXPECT_NE(metrics.body.find("kforge_jobs{kind=\"generate\",state=\"available\"} 1"), std::string::npos)
      << metrics.body;
  EXPECT_NE(metrics.body.find("kforge_workers_alive 0"), std::string::npos);

  std::string log = server.log();
  EXPECT_NE(log.find("method=GET route=/v1/ops/{id} status=404 duration_ms="), std::string::npos) << log;
  EXPECT_NE(log.find("request_id=trace-me-42"), std::string::npos);

  auto unknown = http_request(server.port, "GET", "/v1/nothing-here");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(unknown.headers["content-type"], "application/problem+json");
  auto wrong = http_request(server.port, "DELETE", "/v1/ops");
  EXPECT_EQ(wrong.status, 405);
  EXPECT_NE(wrong.headers["allow"].find("POST"), std::string::npos);
  EXPECT_NE(wrong.headers["allow"].find("GET"), std::string::npos);
}

TEST(ApiCore, OpenApiDocumentMatchesTheRouter) {
  KFORGE_REQUIRE_DB();
  ApiServer server;
  auto doc = server.get("/v1/openapi.json");
  ASSERT_EQ(doc.status, 200);
  const json& spec = server.openapi.doc();
  EXPECT_EQ(spec["openapi"], "3.0.3");
  // Build the same router the server builds and compare both ways.
  kforge::api::ApiContext ctx;
  kforge::api::SystemState state;
  kforge::api::Router router;
  kforge::api::add_system_routes(router, state);
  kforge::api::add_v1_routes(router, ctx);
  std::set<std::pair<std::string, std::string>> routed;
  for (const auto& [method, pattern] : router.routes()) {
    std::string lower = method;
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    routed.insert({lower, pattern});
    EXPECT_TRUE(spec["paths"].contains(pattern) && spec["paths"][pattern].contains(lower))
        << method << " " << pattern << " is routed but not documented";
  }
  for (const auto& [path, item] : spec["paths"].items()) {
    for (const auto& [method, operation] : item.items()) {
      EXPECT_TRUE(routed.count({method, path})) << method << " " << path << " is documented but not routed";
      EXPECT_TRUE(operation.contains("responses"));
    }
  }
  // Every $ref resolves.
  std::function<void(const json&)> refs = [&](const json& node) {
    if (node.is_object()) {
      if (node.contains("$ref")) {
        std::string name = node["$ref"].get<std::string>().substr(std::string("#/components/schemas/").size());
        EXPECT_TRUE(spec["components"]["schemas"].contains(name)) << "dangling $ref " << name;
      }
      for (const auto& item : node) refs(item);
    } else if (node.is_array()) {
      for (const auto& item : node) refs(item);
    }
  };
  refs(spec);
}
