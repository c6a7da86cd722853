// What the web UI reads, over real HTTP against the real server: an op's suite
// level (kept, validated), leaderboard rows with level and generator and the
// device / level / op_id filters, an op's candidates across jobs, one candidate,
// conditional GET (ETag -> 304, also on the cached leaderboard), the vendored
// browser libraries at /vendor/ and the UI itself at /. Responses are checked
// against /v1/openapi.json by the fixture. Run: scripts/test.sh build -R api_web
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "db/connection.h"
#include "db/models.h"
#include "db/ops.h"
#include "tests/server/api_fixture.h"

using kforge::test::ApiServer;
using kforge::test::RawResponse;
using nlohmann::json;

namespace {

json body_of(const RawResponse& resp) { return json::parse(resp.body); }

std::string op_with_level(const std::string& name, const json& level) {
  json op = json::parse(kforge::test::sample_op(name, "x * y"));
  op["level"] = level;
  return op.dump();
}

int64_t insert_op(pqxx::connection& conn, const std::string& name, int level) {
  kforge::db::OpRecord op;
  op.name = name;
  op.source = "def forward(x: Tensor) -> Tensor:\n    return x\n";
  op.spec_json = "{}";
  op.spec_sha256 = name;
  op.level = level;
  return kforge::db::op_insert(conn, op).id;
}

int64_t insert_candidate(pqxx::connection& conn, int64_t job_id, int64_t op_id, const std::string& outcome,
                         std::optional<double> speedup, const std::string& device, int64_t model_id = 0,
                         const std::string& generator = "teacher") {
  kforge::db::CandidateRecord c;
  c.job_id = job_id;
  c.op_id = op_id;
  c.model_id = model_id;
  c.device = device;
  c.source = "__kernel void k() {} // " + outcome;
  c.outcome = outcome;
  c.message = outcome == "correct" ? "" : "harness says: " + outcome;
  c.speedup = speedup;
  if (speedup) {
    c.kernel_ms = 1.0 / *speedup;
    c.baseline_ms = 1.0;
  }
  c.details_json = json{{"generator", generator}}.dump();
  return kforge::db::candidate_insert(conn, c);
}

RawResponse get_if_none_match(int port, const std::string& path, const std::string& etag) {
  return kforge::test::http_request(port, "GET", path, "", {"If-None-Match: " + etag});
}

}  // namespace

TEST(ApiWeb, OpLevelIsKeptOutOfTheIdentityAndChecked) {
  KFORGE_REQUIRE_DB();
  ApiServer server;
  auto created = server.post("/v1/ops", op_with_level("mul_l1", 1), server.submit);
  ASSERT_EQ(created.status, 201) << created.body;
  json op = body_of(created);
  EXPECT_EQ(op["level"], 1);
  EXPECT_EQ(body_of(server.get("/v1/ops/" + std::to_string(op["id"].get<int64_t>())))["level"], 1);

  auto plain = server.post("/v1/ops", kforge::test::sample_op("plain"), server.submit);
  ASSERT_EQ(plain.status, 201) << plain.body;
  EXPECT_TRUE(body_of(plain)["level"].is_null()) << "an op without a level says so";

  for (const json& bad : {json("two"), json(0), json(12), json(1.5)}) {
    auto refused = server.post("/v1/ops", op_with_level("bad_level", bad), server.submit);
    ASSERT_EQ(refused.status, 422) << bad.dump() << " " << refused.body;
    EXPECT_EQ(body_of(refused)["errors"][0]["field"], "level") << refused.body;
  }
  // Inline in a generation the field is named with its path, as the UI shows it.
  auto inline_bad = server.post("/v1/generations", json{{"op", json::parse(op_with_level("inl", "x"))}}.dump(),
                                server.submit);
  ASSERT_EQ(inline_bad.status, 422) << inline_bad.body;
  EXPECT_EQ(body_of(inline_bad)["errors"][0]["field"], "op.level");
}

TEST(ApiWeb, LeaderboardRowsCarryLevelGeneratorAndFilter) {
  KFORGE_REQUIRE_DB();
  ApiServer server({"--leaderboard-cache-ms", "0"});
  int64_t relu = 0, fused = 0, custom = 0, model_id = 0;
  {
    auto conn = kforge::db::connect(server.database.url());
    relu = insert_op(*conn, "relu", 1);
    fused = insert_op(*conn, "linear_gelu", 2);
    custom = insert_op(*conn, "mine", 0);
    kforge::db::ModelRecord model;
    model.name = "kforge-tiny";
    model.version = 3;
    model_id = kforge::db::model_insert(*conn, model).id;
    insert_candidate(*conn, 10, relu, "correct", 1.5, "pocl-cpu");
    insert_candidate(*conn, 11, relu, "correct", 2.5, "pocl-cpu", model_id, "policy");
    insert_candidate(*conn, 11, relu, "correct", 1.2, "nvidia-h100");
    insert_candidate(*conn, 12, fused, "correct", 3.0, "pocl-cpu");
    insert_candidate(*conn, 13, custom, "correct", 1.1, "pocl-cpu", 0, "");
  }
  json rows = body_of(server.get("/v1/leaderboard/ops?limit=100"))["data"];
  ASSERT_EQ(rows.size(), 4u) << rows.dump();
  EXPECT_EQ(rows[0]["op_name"], "relu");
  EXPECT_EQ(rows[0]["device"], "nvidia-h100");
  EXPECT_EQ(rows[0]["generator"], "teacher");
  EXPECT_EQ(rows[1]["device"], "pocl-cpu");
  EXPECT_EQ(rows[1]["generator"], "kforge-tiny@3") << "a model's kernel names the model version";
  EXPECT_EQ(rows[1]["level"], 1);
  EXPECT_EQ(rows[2]["level"], 2);
  EXPECT_TRUE(rows[3]["level"].is_null());
  EXPECT_TRUE(rows[3]["generator"].is_null()) << "nothing recorded: null, not a guess";

  auto names = [&](const std::string& query) {
    std::vector<std::string> out;
    json page = body_of(server.get("/v1/leaderboard/ops?" + query));  // kept alive: the loop reads into it
    for (const auto& row : page["data"]) {
      out.push_back(row["op_name"].get<std::string>() + "/" + row["device"].get<std::string>());
    }
    return out;
  };
  EXPECT_EQ(names("device=nvidia-h100"), std::vector<std::string>{"relu/nvidia-h100"});
  EXPECT_EQ(names("level=2"), std::vector<std::string>{"linear_gelu/pocl-cpu"});
  EXPECT_EQ(names("level=1&device=pocl-cpu"), std::vector<std::string>{"relu/pocl-cpu"});
  EXPECT_EQ(names("op_id=" + std::to_string(relu)), (std::vector<std::string>{"relu/nvidia-h100", "relu/pocl-cpu"}));
  EXPECT_EQ(names("op_id=" + std::to_string(relu) + "&limit=1&after=" +
                  body_of(server.get("/v1/leaderboard/ops?limit=1&op_id=" + std::to_string(relu)))["next_cursor"]
                      .get<std::string>()),
            std::vector<std::string>{"relu/pocl-cpu"})
      << "one op's rows page like the rest";
  EXPECT_EQ(names("op_id=" + std::to_string(relu) + "&level=2"), std::vector<std::string>{});
  EXPECT_EQ(server.get("/v1/leaderboard/ops?level=0").status, 400);
  EXPECT_EQ(server.get("/v1/leaderboard/ops?level=ten").status, 400);
  EXPECT_EQ(server.get("/v1/leaderboard/ops?op_id=-3").status, 400);
}

TEST(ApiWeb, OpCandidatesSpanJobsAndOneCandidateHasItsSource) {
  KFORGE_REQUIRE_DB();
  ApiServer server;
  int64_t op_id = 0, other = 0, wrong_id = 0;
  {
    auto conn = kforge::db::connect(server.database.url());
    op_id = insert_op(*conn, "relu", 1);
    other = insert_op(*conn, "tanh", 1);
    insert_candidate(*conn, 21, op_id, "compile_error", std::nullopt, "pocl-cpu");
    wrong_id = insert_candidate(*conn, 22, op_id, "wrong_output", std::nullopt, "pocl-cpu");
    insert_candidate(*conn, 22, other, "correct", 1.4, "pocl-cpu");
    insert_candidate(*conn, 23, op_id, "correct", 1.9, "pocl-cpu");
  }
  std::string path = "/v1/ops/" + std::to_string(op_id) + "/candidates";
  json first = body_of(server.get(path + "?limit=2"));
  ASSERT_EQ(first["data"].size(), 2u);
  EXPECT_TRUE(first["has_more"].get<bool>());
  EXPECT_EQ(first["data"][0]["outcome"], "compile_error") << "checking order";
  EXPECT_EQ(first["data"][0]["job_id"], 21);
  EXPECT_EQ(first["data"][1]["message"], "harness says: wrong_output");
  json rest = body_of(server.get(path + "?limit=2&after=" + first["next_cursor"].get<std::string>()));
  ASSERT_EQ(rest["data"].size(), 1u) << "the other op's candidate is not listed";
  EXPECT_EQ(rest["data"][0]["job_id"], 23);
  EXPECT_EQ(server.get("/v1/ops/999999/candidates").status, 404);
  EXPECT_EQ(server.get(path + "?after=x").status, 400);

  json one = body_of(server.get("/v1/candidates/" + std::to_string(wrong_id)));
  EXPECT_EQ(one["outcome"], "wrong_output");
  EXPECT_EQ(one["op_id"], op_id);
  EXPECT_NE(one["source"].get<std::string>().find("__kernel"), std::string::npos);
  EXPECT_EQ(server.get("/v1/candidates/999999").status, 404);
  EXPECT_EQ(server.get("/v1/candidates/abc").status, 404);
}

TEST(ApiWeb, PollersGet304UntilTheResourceChanges) {
  KFORGE_REQUIRE_DB();
  ApiServer server;
  int64_t op_id = 0;
  {
    auto conn = kforge::db::connect(server.database.url());
    op_id = insert_op(*conn, "relu", 1);
    insert_candidate(*conn, 31, op_id, "correct", 1.5, "pocl-cpu");
  }
  // Raw GETs: these ops were inserted without inputs, which the schema check would flag.
  auto first = kforge::test::http_request(server.port, "GET", "/v1/ops");
  ASSERT_EQ(first.status, 200);
  std::string etag = first.headers["etag"];
  ASSERT_FALSE(etag.empty()) << "every 200 GET carries an ETag";
  EXPECT_EQ(first.headers["cache-control"], "no-cache");

  auto same = get_if_none_match(server.port, "/v1/ops", etag);
  EXPECT_EQ(same.status, 304);
  EXPECT_TRUE(same.body.empty());
  EXPECT_EQ(same.headers["etag"], etag);

  {
    auto conn = kforge::db::connect(server.database.url());
    insert_op(*conn, "gelu", 1);
  }
  auto changed = get_if_none_match(server.port, "/v1/ops", etag);
  EXPECT_EQ(changed.status, 200) << "a new op changes the list";
  EXPECT_NE(changed.headers["etag"], etag);
  EXPECT_EQ(body_of(changed)["data"].size(), 2u);

  // The leaderboard's cached page answers on the HTTP thread, 304 included.
  auto board = kforge::test::http_request(server.port, "GET", "/v1/leaderboard/ops");
  ASSERT_EQ(board.status, 200);
  auto board_again = get_if_none_match(server.port, "/v1/leaderboard/ops", board.headers["etag"]);
  EXPECT_EQ(board_again.status, 304);
  EXPECT_EQ(get_if_none_match(server.port, "/v1/leaderboard/ops", "\"0000000000000000\"").status, 200);

  // Errors and POSTs never take part.
  auto missing = get_if_none_match(server.port, "/v1/ops/999999", "*");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.headers.count("etag"), 0u);
}

TEST(ApiWeb, ServesTheUiAndOnlyTheVendoredPackages) {
  KFORGE_REQUIRE_DB();
  // A private vendor folder shaped like /usr/share/javascript, so the test does not
  // depend on which libjs-* packages this machine has.
  namespace fs = std::filesystem;
  fs::path vendor = fs::temp_directory_path() / ("kforge-vendor-" + std::to_string(getpid()));
  fs::create_directories(vendor / "chart.js" / "chunks");
  fs::create_directories(vendor / "jquery");
  std::ofstream(vendor / "chart.js" / "chart.mjs") << "export const Chart = 1;\n";
  std::ofstream(vendor / "jquery" / "jquery.js") << "window.$ = 1;\n";
  ApiServer server({"--vendor-dir", vendor.string()});

  auto module = kforge::test::http_request(server.port, "GET", "/vendor/chart.js/chart.mjs");
  EXPECT_EQ(module.status, 200);
  EXPECT_EQ(module.headers["content-type"], "text/javascript; charset=utf-8") << "ES modules need a JS type";
  EXPECT_EQ(module.headers["cache-control"], "public, max-age=86400");
  EXPECT_EQ(module.body, "export const Chart = 1;\n");
  EXPECT_EQ(kforge::test::http_request(server.port, "GET", "/vendor/jquery/jquery.js").status, 404)
      << "only the packages the UI uses";
  EXPECT_EQ(kforge::test::http_request(server.port, "GET", "/vendor/chart.js/../jquery/jquery.js").status, 404);
  EXPECT_EQ(kforge::test::http_request(server.port, "GET", "/vendor/chart.js/chunks").status, 404) << "a folder";
  auto absent = kforge::test::http_request(server.port, "GET", "/vendor/highlight.js/highlight.min.js");
  EXPECT_EQ(absent.status, 404);
  EXPECT_NE(absent.body.find("libjs-highlight.js"), std::string::npos) << "says which package is missing";

  auto index = kforge::test::http_request(server.port, "GET", "/");
  EXPECT_EQ(index.status, 200);
  EXPECT_EQ(index.headers["content-type"], "text/html; charset=utf-8");
  EXPECT_FALSE(index.headers["etag"].empty()) << "the UI's own files revalidate too";
  fs::remove_all(vendor);
}
