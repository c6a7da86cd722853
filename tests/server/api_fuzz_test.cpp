// Fuzzes the real kforge-server over real HTTP (issue 18): every method on every route
// of /v1/openapi.json, bodies generated from the request schemas and then mutated
// (random bytes in every string field, numbers at the edges, wrong types, missing and
// unknown fields, non-objects, garbage, deep nesting), random bytes in path and query
// parameters and in headers, and raw malformed requests. Every answer must be a status
// the document lists for that operation or for every operation (x-common-responses),
// never a 5xx, with a schema-valid body where the document has one; the server must
// stay up. KFORGE_FUZZ_SEED picks the cases (default 18); the last line printed is the
// JSON bench/reliability/run.sh records. Run: scripts/test.sh build -R api_fuzz
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <set>

#include "tests/server/api_fixture.h"
#include "tests/support/http_client.h"

using kforge::test::ApiServer;
using kforge::test::http_raw;
using kforge::test::http_request;
using nlohmann::json;

namespace {

const char* const kMethods[] = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "FOO"};

// Strings an attacker tries. "@RAW" entries are spliced into the JSON text unescaped
// (invalid UTF-8, lone surrogates), so the body itself is malformed.
std::vector<std::string> hostile_strings() {
  return {"",
          std::string("\0", 1),
          std::string("a\0b", 3),
          "\x01\x02\x1b[31m\x7f",
          "'; DROP TABLE ops; --",
          "../../../../etc/passwd",
          "%s%n%x%d",
          "\xf0\x9f\x94\xa5\xe2\x80\xae\xcc\x81",  // emoji, right-to-left override, combining accent
          std::string(70000, 'A'),
          "1e309",
          "  \t\r\n ",
          "@RAW\xff\xfe\xc3\x28",
          "@RAW\\ud800",
          "@RAW\xed\xa0\x80"};
}

// Replacements for a non-string value (and wrong types for any value).
std::vector<json> hostile_values() {
  return {nullptr, json::array(), json::object(), true, -1, 0, 1.5, 1e308, -1e308,
          json::parse("18446744073709551615"), json::parse("-9223372036854775808"), "string", json::array({nullptr})};
}

struct Budget {
  int requests = 0;
  int status_5xx = 0;
  int undocumented = 0;
  int schema_errors = 0;
  int server_crashes = 0;
  std::map<int, int> by_status;
};

class Fuzzer {
 public:
  Fuzzer(ApiServer& server, uint64_t seed) : server_(server), rng_(seed) {}

  // Sends one request and checks the answer; `method` and `path` as sent.
  void send(const std::string& method, const std::string& path, const std::string& body = "",
            std::vector<std::string> headers = {}, const std::string& token = "admin") {
    if (token == "admin") headers.push_back("Authorization: Bearer " + server_.admin);
    else if (token == "submit") headers.push_back("Authorization: Bearer " + server_.submit);
    else if (!token.empty()) headers.push_back("Authorization: " + token);
    auto resp = http_request(server_.port, method, path, body, headers, 60);
    judge(method, path, resp.status, resp.headers.count("content-type") ? resp.headers["content-type"] : "",
          resp.body, body);
  }

  void judge(const std::string& method, const std::string& path, int status, const std::string& content_type,
             const std::string& body, const std::string& sent) {
    ++budget.requests;
    ++budget.by_status[status];
    std::string what = method + " " + path.substr(0, 120) + " [" + sent.substr(0, 160) + "] -> " +
                       std::to_string(status) + " " + body.substr(0, 300);
    if (status == 0 || !server_.process.running()) {
      ++budget.server_crashes;
      ADD_FAILURE() << "no answer or the server died: " << what;
      return;
    }
    if (status >= 500) {
      ++budget.status_5xx;
      ADD_FAILURE() << "5xx for bad input: " << what;
      return;
    }
    if (!documented(method, path, status)) {
      ++budget.undocumented;
      ADD_FAILURE() << "undocumented status: " << what;
      return;
    }
    std::string templ = server_.openapi.template_for(path);
    std::string lower = lower_case(method == "HEAD" ? "GET" : method);
    bool listed = !templ.empty() && server_.openapi.doc()["paths"][templ].contains(lower) &&
                  server_.openapi.doc()["paths"][templ][lower]["responses"].contains(std::to_string(status));
    if (listed && method != "HEAD") {
      std::string problem = server_.openapi.check(method, path, status, content_type, body);
      if (!problem.empty()) {
        ++budget.schema_errors;
        ADD_FAILURE() << "body does not match the document (" << problem << "): " << what;
      }
    }
  }

  // The operation's statuses, every operation's (x-common-responses), 401/403 where a
  // token is checked, 405 for a method the path does not have, 404 for unknown paths.
  bool documented(const std::string& method, const std::string& path, int status) {
    const json& doc = server_.openapi.doc();
    std::string code = std::to_string(status);
    if (doc.contains("x-common-responses") && doc["x-common-responses"].contains(code)) return true;
    std::string templ = server_.openapi.template_for(path);
    if (templ.empty()) return status == 404 || (path.rfind("/v1/", 0) != 0 && status == 200);
    const json& item = doc["paths"][templ];
    std::string lower = lower_case(method == "HEAD" ? "GET" : method);
    if (method == "OPTIONS") return status == 200;
    if (!item.contains(lower)) return status == 405;
    return item[lower]["responses"].contains(code) || status == 404;  // a path id that names nothing
  }

  static std::string lower_case(std::string text) {
    for (auto& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
  }

  static std::string percent_encode(const std::string& bytes) {
    static const char* hex = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : bytes) {
      if (std::isalnum(c) || c == '-' || c == '_' || c == '.') out += static_cast<char>(c);
      else out += std::string("%") + hex[c >> 4] + hex[c & 15];
    }
    return out;
  }

  std::string random_bytes(size_t max_len) {
    std::uniform_int_distribution<size_t> len(0, max_len);
    std::uniform_int_distribution<int> byte(0, 255);
    std::string out(len(rng_), '\0');
    for (auto& c : out) c = static_cast<char>(byte(rng_));
    return out;
  }

  // A JSON text where the values at marked leaves are replaced by raw text.
  static std::string splice_raw(json doc, const json::json_pointer& where, const std::string& raw) {
    const std::string marker = "\x01MARK\x01";
    doc[where] = marker;
    std::string text = doc.dump();
    std::string quoted = json(marker).dump();
    auto pos = text.find(quoted);
    return text.substr(0, pos) + "\"" + raw + "\"" + text.substr(pos + quoted.size());
  }

  // Every leaf of a document as a JSON pointer.
  static void leaves(const json& value, const json::json_pointer& at, std::vector<json::json_pointer>& out) {
    if (value.is_object() && !value.empty()) {
      for (const auto& item : value.items()) leaves(item.value(), at / item.key(), out);
    } else if (value.is_array() && !value.empty()) {
      for (size_t item_idx = 0; item_idx < value.size(); ++item_idx) leaves(value[item_idx], at / item_idx, out);
    } else {
      out.push_back(at);
    }
  }

  // Every member, to remove one at a time.
  static void members(const json& value, const json::json_pointer& at, std::vector<json::json_pointer>& out) {
    if (value.is_object()) {
      for (const auto& item : value.items()) {
        out.push_back(at / item.key());
        members(item.value(), at / item.key(), out);
      }
    } else if (value.is_array()) {
      for (size_t item_idx = 0; item_idx < value.size(); ++item_idx) members(value[item_idx], at / item_idx, out);
    }
  }

  // A body that satisfies the schema as far as it says (required members, enums, minimums).
  json instance(const json& raw_schema, int depth = 0) {
    const json& doc = server_.openapi.doc();
    json schema = raw_schema;
    while (schema.is_object() && schema.contains("$ref")) {
      std::string ref = schema["$ref"];
      schema = doc["components"]["schemas"][ref.substr(std::string("#/components/schemas/").size())];
    }
    if (schema.is_object() && schema.contains("allOf")) return instance(schema["allOf"][0], depth);
    if (!schema.is_object() || depth > 6) return nullptr;
    if (schema.contains("default")) return schema["default"];
    if (schema.contains("enum")) return schema["enum"][0];
    std::string type = schema.value("type", "");
    if (type == "object") {
      json out = json::object();
      if (schema.contains("properties")) {
        for (const auto& [name, sub] : schema["properties"].items()) out[name] = instance(sub, depth + 1);
      }
      return out;
    }
    if (type == "array") return json::array({instance(schema.value("items", json::object()), depth + 1)});
    if (type == "integer") return schema.contains("minimum") ? schema["minimum"] : json(1);
    if (type == "number") return schema.contains("minimum") ? schema["minimum"] : json(0.5);
    if (type == "boolean") return true;
    if (type == "string") return "x";
    return nullptr;
  }

  Budget budget;

 private:
  ApiServer& server_;
  std::mt19937_64 rng_;
};

}  // namespace

TEST(ApiFuzz, EveryRouteEveryMethodHostileInput) {
  KFORGE_REQUIRE_DB();
  ApiServer server({"--max-body-bytes", "262144"});
  const char* seed_text = std::getenv("KFORGE_FUZZ_SEED");
  uint64_t seed = seed_text ? std::strtoull(seed_text, nullptr, 10) : 18;
  Fuzzer fuzz(server, seed);
  auto started = std::chrono::steady_clock::now();

  // Real rows for the path ids: an op, a generation, a model with a file, a token.
  auto op = server.post("/v1/ops", kforge::test::sample_op("fuzz_op"), server.submit);
  ASSERT_EQ(op.status, 201) << op.body;
  std::string op_id = json::parse(op.body)["id"].dump();
  auto generation = server.post("/v1/generations", json{{"op_id", std::stoll(op_id)}}.dump(), server.submit);
  ASSERT_EQ(generation.status, 202) << generation.body;
  std::string job_id = json::parse(generation.body)["id"].dump();
  auto model_dir = std::filesystem::temp_directory_path() / ("kforge-fuzz-model-" + std::to_string(server.port));
  std::filesystem::create_directories(model_dir);
  std::ofstream(model_dir / "config.json") << R"({"model_type": "qwen2"})";
  auto model = server.post("/v1/models", json{{"name", "fuzz-model"}, {"path", model_dir.string()}}.dump(), server.admin);
  ASSERT_EQ(model.status, 201) << model.body;
  std::string model_id = json::parse(model.body)["id"].dump();
  // Token routes get a throwaway token's id: revoking the fuzzer's own would end the run.
  auto spare = server.post("/v1/tokens", json{{"name", "spare"}, {"scopes", {"submit"}}}.dump(), server.admin);
  ASSERT_EQ(spare.status, 201) << spare.body;
  std::string token_id = json::parse(spare.body)["id"].dump();

  // Hand-made valid bodies reach deeper than the schema's (a compiling op, an existing op id).
  std::map<std::string, json> seeds = {
      {"/v1/ops", json::parse(kforge::test::sample_op("fuzz_seed"))},
      {"/v1/generations", {{"op", json::parse(kforge::test::sample_op("fuzz_inline"))}, {"samples", 2}}},
      {"/v1/training-jobs", {{"method", "sft"}, {"suite", "builtin"}, {"hyperparameters", {{"epochs", 1}}}}},
      {"/v1/evaluations", {{"model", "fuzz-model@1"}, {"suite", "heldout"}, {"settings", {{"samples", 1}}}}},
      {"/v1/models", {{"name", "fuzz-model"}, {"path", model_dir.string()}}},
      {"/v1/tokens", {{"name", "fuzz"}, {"scopes", {"submit"}}}}};

  const json& paths = server.openapi.doc()["paths"];
  std::vector<std::string> ids = {"0", "-1", "abc", "1.5", "%00", "%ff", "%2e%2e", "99999999999999999999", "%20" + op_id};
  for (const auto& [templ, item] : paths.items()) {
    // Concrete paths: the template with real ids, then with hostile ones.
    std::vector<std::string> concrete;
    auto fill = [&](const std::string& id, const std::string& name) {
      std::string path = templ;
      auto put = [&](const std::string& param, const std::string& value) {
        auto pos = path.find(param);
        if (pos != std::string::npos) path.replace(pos, param.size(), value);
      };
      std::string real = templ.find("/ops/") != std::string::npos      ? op_id
                         : templ.find("/models/") != std::string::npos ? model_id
                         : templ.find("/tokens/") != std::string::npos ? token_id
                                                                       : job_id;
      put("{id}", id.empty() ? real : id);
      put("{name}", name);
      return path;
    };
    concrete.push_back(fill("", "config.json"));
    if (templ.find('{') != std::string::npos) {
      for (const auto& id : ids) concrete.push_back(fill(id, "config.json"));
      for (std::string name : {"..", "%2e%2e", "%00", "missing", "config.json%00.txt"}) concrete.push_back(fill("", name));
    }
    for (const auto& path : concrete) {
      for (const char* method : kMethods) {
        bool has_body = item.contains(Fuzzer::lower_case(method)) && item[Fuzzer::lower_case(method)].contains("requestBody");
        if (has_body) continue;  // bodies are fuzzed below
        fuzz.send(method, path, std::string(method) == "POST" ? "{}" : "");
      }
    }
    // Query parameters of GET lists, with random bytes.
    if (item.contains("get") && templ.find('{') == std::string::npos) {
      for (std::string query : std::vector<std::string>{"limit=0", "limit=101", "limit=-1", "limit=abc", "limit=1e2", "limit=99999999999",
                                "after=zz", "after=%00", "after=ffff", "after=" + std::string(3000, 'a'),
                                "status=nope", "status=%00", "target=%ff", "suite=%00", "kind=%c3%28", "limit=%00"}) {
        fuzz.send("GET", templ + "?" + query);
      }
      for (int query_idx = 0; query_idx < 8; ++query_idx) {
        fuzz.send("GET", templ + "?" + Fuzzer::percent_encode(fuzz.random_bytes(12)) + "=" +
                             Fuzzer::percent_encode(fuzz.random_bytes(40)));
      }
    }
    // Bodies: the schema's instance merged with the hand seed, then mutated leaf by leaf.
    if (!item.contains("post") || !item["post"].contains("requestBody")) continue;
    std::string path = concrete[0];
    json base = fuzz.instance(item["post"]["requestBody"]["content"]["application/json"]["schema"]);
    if (seeds.count(templ)) base = seeds[templ];
    fuzz.send("POST", path, fuzz.instance(item["post"]["requestBody"]["content"]["application/json"]["schema"]).dump());
    fuzz.send("POST", path, base.dump(), {}, "");                       // no token
    fuzz.send("POST", path, base.dump(), {}, "Bearer kf_wrong");       // unknown token
    fuzz.send("POST", path, base.dump(), {}, "submit");
    std::vector<json::json_pointer> leaf_paths, member_paths;
    Fuzzer::leaves(base, json::json_pointer(), leaf_paths);
    Fuzzer::members(base, json::json_pointer(), member_paths);
    for (const auto& leaf : leaf_paths) {
      for (const auto& text : hostile_strings()) {
        // A source that is valid text compiles in the sandboxed probe (about a second):
        // fuzz the op source with the strings refused before the probe, plus one that runs it.
        bool is_source = leaf.back() == "source";
        if (text.rfind("@RAW", 0) == 0) {
          fuzz.send("POST", path, Fuzzer::splice_raw(base, leaf, text.substr(4)));
          continue;
        }
        if (is_source && text.find('\0') == std::string::npos && text != std::string(70000, 'A') && text != "")
          continue;
        json mutated = base;
        mutated[leaf] = text;
        fuzz.send("POST", path, mutated.dump());
      }
      for (const auto& value : hostile_values()) {
        json mutated = base;
        mutated[leaf] = value;
        fuzz.send("POST", path, mutated.dump());
      }
    }
    for (const auto& member : member_paths) {
      json mutated = base;
      mutated[member.parent_pointer()].erase(member.back());
      fuzz.send("POST", path, mutated.dump());
      json extra = base;
      if (extra[member.parent_pointer()].is_object()) {
        extra[member.parent_pointer()]["unknown_" + member.back()] = 1;
        fuzz.send("POST", path, extra.dump());
      }
    }
    // Whole-body garbage.
    std::string deep(70, '[');
    for (std::string garbage : std::vector<std::string>{std::string(""), std::string("[]"), std::string("\"x\""), std::string("null"),
                                std::string("{"), std::string("{\"a\":}"), base.dump().substr(0, base.dump().size() / 2),
                                deep + std::string(70, ']'), std::string("{\"a\":1,\"a\":2}"),
                                std::string(300000, ' '), fuzz.random_bytes(2000)}) {
      fuzz.send("POST", path, garbage);
    }
    // Headers with hostile values.
    for (std::string header : std::vector<std::string>{"Idempotency-Key: " + std::string(300, 'k'), std::string("Idempotency-Key: \x01\x7f"),
                               std::string("Idempotency-Key: caf\xc3\xa9"), std::string("Content-Type: text/plain"),
                               std::string("X-Request-Id: ../../\xff"), std::string("Content-Type: application/json; charset=latin1")}) {
      fuzz.send("POST", path, base.dump(), {header});
    }
  }

  // Raw malformed requests: the HTTP library's own 400s count as answers.
  for (std::string raw : std::vector<std::string>{std::string("GET /v1/\xff\xfe HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
                          std::string("GET /v1/health HTTP/1.1\r\nHost: x\r\nBad Header\r\nConnection: close\r\n\r\n"),
                          std::string("POST /v1/ops HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\nConnection: close\r\n\r\n"),
                          std::string("POST /v1/ops HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n"
                                      "Connection: close\r\n\r\n"),
                          std::string("GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: ") + std::string(20000, 'x') +
                              "\r\nConnection: close\r\n\r\n",
                          std::string("GET http://evil.example/v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
                          std::string("GET /v1/health?%zz=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
                          std::string("\r\n\r\n"), std::string("GARBAGE\r\n\r\n")}) {
    std::string reply = http_raw(server.port, raw, 10);
    int status = reply.rfind("HTTP/1.1 ", 0) == 0 ? std::atoi(reply.substr(9, 3).c_str()) : -1;
    ++fuzz.budget.requests;
    EXPECT_TRUE(status == -1 || status < 500) << "raw request got " << reply.substr(0, 200);
    if (status >= 500) ++fuzz.budget.status_5xx;
    ASSERT_EQ(http_request(server.port, "GET", "/v1/health").status, 200) << "after raw " << raw.substr(0, 60);
  }

  EXPECT_EQ(http_request(server.port, "GET", "/v1/health").status, 200);
  EXPECT_TRUE(server.process.running());
  std::string log = server.log();
  EXPECT_EQ(log.find("handler failed"), std::string::npos) << "a handler threw";
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  json by_status = json::object();
  for (const auto& [status, count] : fuzz.budget.by_status) by_status[std::to_string(status)] = count;
  json summary = {{"seed", seed},
                  {"requests", fuzz.budget.requests},
                  {"server_crashes", fuzz.budget.server_crashes},
                  {"status_5xx", fuzz.budget.status_5xx},
                  {"undocumented_status", fuzz.budget.undocumented},
                  {"schema_errors", fuzz.budget.schema_errors},
                  {"by_status", by_status},
                  {"seconds", std::round(seconds * 10) / 10}};
  std::cout << "KFORGE_RESULT fuzz " << summary.dump() << std::endl;
  std::filesystem::remove_all(model_dir);
}
