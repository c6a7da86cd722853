// Every v1 resource over real HTTP against the real server: ops, generations
// (candidates written as a worker would, best kernel, cancel while queued and
// while running), training jobs (defaults echoed, metrics, events), evaluations,
// KernelBench problems as ops, models (files streamed with sha256, archived by an admin, shipped
// models registered by `kforge-server models ship`), op deletion, leaderboards
// (keyset pagination), workers, jobs. Every response is checked against /v1/openapi.json by the fixture.
// Run: scripts/test.sh build -R api_resources
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "common/sha256.h"
#include "db/connection.h"
#include "db/models.h"
#include "db/ops.h"
#include "db/queue.h"
#include "db/workers.h"
#include "common/subprocess.h"
#include "tests/server/api_fixture.h"
#include "tests/support/processes.h"

using kforge::test::ApiServer;
using nlohmann::json;

namespace {

json body_of(const kforge::test::RawResponse& resp) { return json::parse(resp.body); }

// Follows next_cursor to the end; returns every item's `key`.
std::vector<json> collect(ApiServer& server, const std::string& path, int limit, const std::string& token = "") {
  std::vector<json> items;
  std::string cursor;
  for (int page_idx = 0; page_idx < 100; ++page_idx) {
    std::string sep = path.find('?') == std::string::npos ? "?" : "&";
    auto resp = server.get(path + sep + "limit=" + std::to_string(limit) + (cursor.empty() ? "" : "&after=" + cursor),
                           token);
    EXPECT_EQ(resp.status, 200) << resp.body;
    json page = body_of(resp);
    EXPECT_LE(page["data"].size(), static_cast<size_t>(limit));
    for (const auto& item : page["data"]) items.push_back(item);
    if (!page["has_more"].get<bool>()) {
      EXPECT_TRUE(page["next_cursor"].is_null());
      break;
    }
    cursor = page["next_cursor"];
  }
  return items;
}

kforge::db::CandidateRecord candidate(int64_t job_id, int64_t op_id, const std::string& outcome,
                                      std::optional<double> speedup, const std::string& device = "pocl-cpu") {
  kforge::db::CandidateRecord c;
  c.job_id = job_id;
  c.op_id = op_id;
  c.device = device;
  c.source = "__kernel void k() {} // " + outcome;
  c.outcome = outcome;
  c.speedup = speedup;
  if (speedup) {
    c.kernel_ms = 1.0 / *speedup;
    c.baseline_ms = 1.0;
  }
  return c;
}

}  // namespace

TEST(ApiResources, OpsCreateDeduplicateGetAndPaginate) {
  KFORGE_REQUIRE_DB();
  ApiServer server;
  auto created = server.post("/v1/ops", kforge::test::sample_op("silu_mul"), server.submit);
  ASSERT_EQ(created.status, 201) << created.body;
  json op = body_of(created);
  EXPECT_EQ(op["outputs"], json::parse(R"([{"shape": [64, 32], "dtype": "float32"}])")) << op.dump();
  EXPECT_EQ(created.headers["location"], "/v1/ops/" + std::to_string(op["id"].get<int64_t>()));
  auto again = server.post("/v1/ops", kforge::test::sample_op("silu_mul"), server.submit);
  EXPECT_EQ(again.status, 200) << "an identical op is reused";
  EXPECT_EQ(body_of(again)["id"], op["id"]);
  EXPECT_EQ(server.get("/v1/ops/" + std::to_string(op["id"].get<int64_t>())).status, 200);
  EXPECT_EQ(server.get("/v1/ops/999999").status, 404);
  EXPECT_EQ(server.get("/v1/ops/abc").status, 404);
  EXPECT_EQ(server.post("/v1/ops", kforge::test::sample_op("x2"), "").status, 401);
  auto missing = server.post("/v1/ops", R"({"name": "x"})", server.submit);
  EXPECT_EQ(missing.status, 422);
  EXPECT_GE(body_of(missing)["errors"].size(), 2u) << missing.body;

  ASSERT_EQ(server.post("/v1/ops", kforge::test::sample_op("mul_op", "x * y"), server.submit).status, 201);
  ASSERT_EQ(server.post("/v1/ops", kforge::test::sample_op("add_op", "x + y"), server.submit).status, 201);
  auto all = collect(server, "/v1/ops", 2);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0]["name"], "add_op") << "newest first";
  EXPECT_EQ(all[2]["name"], "silu_mul");
  EXPECT_EQ(server.get("/v1/ops?limit=0").status, 400);
  EXPECT_EQ(server.get("/v1/ops?after=xyz").status, 400);
}

// A KernelBench problem file as the op: converted in a sandboxed child, then probed and
// stored like any op; a problem the importer refuses is a 422 naming why.
TEST(ApiResources, OpsFromKernelBenchProblems) {
  KFORGE_REQUIRE_DB();
  auto read = [](const std::string& name) {
    std::ifstream in(std::string(KFORGE_SOURCE_DIR) + "/tests/tools/problems/" + name + ".py");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  };
  if (kforge::run_command({"/usr/bin/python3", "-c", "import torch.fx"}).first != 0)
    GTEST_SKIP() << "no /usr/bin/python3 with torch (apt-get install python3-torch)";
  ApiServer server;
  json request = {{"kernelbench", read("linear_relu")}, {"name", "kb_linear_relu"}, {"level", 1}};
  auto created = server.post("/v1/ops", request.dump(), server.submit);
  ASSERT_EQ(created.status, 201) << created.body;
  json op = body_of(created);
  EXPECT_EQ(op["name"], "kb_linear_relu");
  EXPECT_EQ(op["level"], 1);
  EXPECT_NE(op["source"].get<std::string>().find("torch.linear(x, fc_weight, fc_bias)"), std::string::npos) << op;
  ASSERT_EQ(op["outputs"].size(), 1u) << op;
  EXPECT_EQ(op["outputs"][0]["shape"], json({64, 96})) << "probed like any op";
  auto again = server.post("/v1/ops", request.dump(), server.submit);
  EXPECT_EQ(again.status, 200) << "the same problem converts to the same op: " << again.body;

  auto refused = server.post("/v1/ops", json{{"kernelbench", read("bad_module")}}.dump(), server.submit);
  ASSERT_EQ(refused.status, 422) << refused.body;
  EXPECT_NE(refused.body.find("LSTM"), std::string::npos) << refused.body;
  EXPECT_NE(refused.body.find("kernelbench"), std::string::npos) << "the field is named: " << refused.body;
  // Untrusted code that exits or raises at import is a message, not a crash.
  auto hostile = server.post("/v1/ops", json{{"kernelbench", "import os\nos._exit(3)\n"}}.dump(), server.submit);
  EXPECT_EQ(hostile.status, 422) << hostile.body;
  auto mixed = server.post("/v1/ops", json{{"kernelbench", read("linear_relu")}, {"source", "x"}}.dump(), server.submit);
  EXPECT_EQ(mixed.status, 422) << mixed.body;
  EXPECT_NE(mixed.body.find("not allowed beside kernelbench"), std::string::npos) << mixed.body;
}

TEST(ApiResources, GenerationLifecycleCandidatesAndCancel) {
  KFORGE_REQUIRE_DB();
  ApiServer server;
  auto op = body_of(server.post("/v1/ops", kforge::test::sample_op(), server.submit));
  int64_t op_id = op["id"];
  auto accepted = server.post("/v1/generations", json{{"op_id", op_id}, {"samples", 3}, {"target", "opencl"}}.dump(),
                              server.submit);
  ASSERT_EQ(accepted.status, 202) << accepted.body;
  json gen = body_of(accepted);
  EXPECT_EQ(gen["status"], "queued");
  EXPECT_EQ(gen["samples"], 3);
  EXPECT_EQ(gen["time_budget_s"], 600) << "defaults are echoed";
  EXPECT_TRUE(gen["best"].is_null());
  int64_t gen_id = gen["id"];

  EXPECT_EQ(server.post("/v1/generations", json{{"op_id", op_id}, {"op", json::parse(kforge::test::sample_op())}}.dump(),
                        server.submit).status, 422);
  EXPECT_EQ(server.post("/v1/generations", R"({"samples": 2})", server.submit).status, 422);
  EXPECT_EQ(server.post("/v1/generations", R"({"op_id": 987654})", server.submit).status, 422);
  EXPECT_EQ(server.post("/v1/generations", json{{"op_id", op_id}, {"model", "nope@7"}}.dump(), server.submit).status,
            422);

  // A worker records candidates; the API shows the best correct, unflagged one.
  {
    auto conn = kforge::db::connect(server.database.url());
    kforge::db::candidate_insert(*conn, candidate(gen_id, op_id, "compile_error", std::nullopt));
    kforge::db::candidate_insert(*conn, candidate(gen_id, op_id, "correct", 1.5));
    kforge::db::candidate_insert(*conn, candidate(gen_id, op_id, "correct", 2.5));
    auto flagged = candidate(gen_id, op_id, "correct", 50.0);
    flagged.flagged = true;
    kforge::db::candidate_insert(*conn, flagged);
  }
  json shown = body_of(server.get("/v1/generations/" + std::to_string(gen_id)));
  ASSERT_FALSE(shown["best"].is_null());
  EXPECT_DOUBLE_EQ(shown["best"]["speedup"].get<double>(), 2.5);
  EXPECT_NE(shown["best"]["source"].get<std::string>().find("__kernel"), std::string::npos);
  EXPECT_EQ(shown["candidates"]["total"], 4);
  EXPECT_EQ(shown["candidates"]["by_outcome"]["correct"], 3);
  auto candidates = collect(server, "/v1/generations/" + std::to_string(gen_id) + "/candidates", 3);
  ASSERT_EQ(candidates.size(), 4u);
  EXPECT_EQ(candidates[0]["outcome"], "compile_error") << "candidates come in sampling order";
  EXPECT_EQ(server.get("/v1/generations/424242/candidates").status, 404);

  // Cancel while queued -> 200 cancelled; again -> 409.
  EXPECT_EQ(server.post("/v1/generations/" + std::to_string(gen_id) + "/cancel", "", "").status, 401);
  auto cancelled = server.post("/v1/generations/" + std::to_string(gen_id) + "/cancel", "", server.submit);
  EXPECT_EQ(cancelled.status, 200);
  EXPECT_EQ(body_of(cancelled)["status"], "cancelled");
  EXPECT_FALSE(body_of(cancelled)["finished_at"].is_null());
  EXPECT_EQ(server.post("/v1/generations/" + std::to_string(gen_id) + "/cancel", "", server.submit).status, 409);
  EXPECT_EQ(server.post("/v1/generations/777777/cancel", "", server.submit).status, 404);

  // Cancel while running -> 202, the worker is asked to stop.
  auto second = body_of(server.post("/v1/generations", json{{"op_id", op_id}}.dump(), server.submit));
  {
    auto conn = kforge::db::connect(server.database.url());
    int64_t worker_id = kforge::db::worker_register(*conn, {"testhost", 1, "pocl", "0.1.0", 1});
    kforge::db::ClaimRequest claim;
    claim.worker_id = worker_id;
    claim.capabilities = {"target:opencl", "device:cpu"};  // what a CPU worker offers
    auto claimed = kforge::db::job_claim(*conn, claim);
    ASSERT_EQ(claimed.size(), 1u);
  }
  json running = body_of(server.get("/v1/generations/" + std::to_string(second["id"].get<int64_t>())));
  EXPECT_EQ(running["status"], "running");
  EXPECT_FALSE(running["started_at"].is_null());
  auto asked = server.post("/v1/generations/" + std::to_string(second["id"].get<int64_t>()) + "/cancel", "",
                           server.submit);
  EXPECT_EQ(asked.status, 202);
  EXPECT_TRUE(body_of(asked)["cancel_requested"].get<bool>());

  auto listed = collect(server, "/v1/generations", 1);
  EXPECT_EQ(listed.size(), 2u);
  auto only_running = body_of(server.get("/v1/generations?status=running"));
  EXPECT_EQ(only_running["data"].size(), 1u);
  EXPECT_EQ(server.get("/v1/generations?status=sleeping").status, 400);
}

TEST(ApiResources, TrainingJobsEvaluationsAndModels) {
  KFORGE_REQUIRE_DB();
  ApiServer server;
  auto sft = server.post("/v1/training-jobs", R"({"method": "sft", "suite": "builtin", "hyperparameters": {"epochs": 2}})",
                         server.submit);
  ASSERT_EQ(sft.status, 202) << sft.body;
  json sft_job = body_of(sft);
  EXPECT_EQ(sft_job["hyperparameters"]["epochs"], 2);
  EXPECT_DOUBLE_EQ(sft_job["hyperparameters"]["learning_rate"].get<double>(), 3e-4) << "defaults echoed back";
  EXPECT_EQ(sft_job["status"], "queued");
  int64_t sft_id = sft_job["id"];

  auto unknown = server.post("/v1/training-jobs", R"({"method": "sft", "suite": "s", "hyperparameters": {"lr": 1}})",
                             server.submit);
  EXPECT_EQ(unknown.status, 422);
  EXPECT_EQ(body_of(unknown)["errors"][0]["field"], "hyperparameters.lr");
  EXPECT_EQ(server.post("/v1/training-jobs", R"({"method": "ppo", "suite": "s"})", server.submit).status, 422);
  EXPECT_EQ(server.post("/v1/training-jobs", R"({"method": "sft"})", server.submit).status, 422);
  EXPECT_EQ(server.post("/v1/training-jobs", R"({"method": "grpo", "suite": "s"})", server.submit).status, 422);
  EXPECT_EQ(server.post("/v1/training-jobs", R"({"method": "grpo", "suite": "s", "base_model": "ghost"})",
                        server.submit).status, 422);

  // A model version registered by an admin from a directory of files.
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("kforge-model-" + std::to_string(server.port));
  fs::create_directories(dir);
  std::string weights(300000, '\0');
  for (size_t byte_idx = 0; byte_idx < weights.size(); ++byte_idx) weights[byte_idx] = static_cast<char>(byte_idx * 7);
  std::ofstream(dir / "model.safetensors", std::ios::binary) << weights;
  std::ofstream(dir / "config.json") << R"({"hidden_size": 64})";
  std::string register_body = json{{"name", "kforge-tiny"}, {"path", dir.string()}}.dump();
  EXPECT_EQ(server.post("/v1/models", register_body, server.submit).status, 403);
  auto registered = server.post("/v1/models", register_body, server.admin);
  ASSERT_EQ(registered.status, 201) << registered.body;
  json model = body_of(registered);
  EXPECT_EQ(model["model"], "kforge-tiny@1");
  EXPECT_EQ(model["config"]["hidden_size"], 64);
  std::string model_path = "/v1/models/" + std::to_string(model["id"].get<int64_t>());
  EXPECT_EQ(server.get("/v1/models").status, 200);
  EXPECT_EQ(server.get(model_path).status, 200);
  EXPECT_EQ(server.get(model_path + "/files/model.safetensors").status, 401) << "files need a token";
  auto file = server.get(model_path + "/files/model.safetensors", server.submit);
  ASSERT_EQ(file.status, 200);
  EXPECT_EQ(file.body.size(), weights.size());
  EXPECT_TRUE(file.body == weights) << "streamed bytes differ";
  EXPECT_EQ(file.headers["x-checksum-sha256"], kforge::sha256_hex(weights));
  EXPECT_EQ(server.get(model_path + "/files/..%2F..%2Fetc%2Fpasswd", server.submit).status, 404);
  EXPECT_EQ(server.get(model_path + "/files/missing.bin", server.submit).status, 404);
  fs::remove_all(dir);

  auto grpo = server.post("/v1/training-jobs",
                          R"({"method": "grpo", "suite": "builtin", "base_model": "kforge-tiny", "hyperparameters": {"group_size": 4}})",
                          server.submit);
  ASSERT_EQ(grpo.status, 202) << grpo.body;
  EXPECT_EQ(body_of(grpo)["base_model"], "kforge-tiny@1");
  EXPECT_DOUBLE_EQ(body_of(grpo)["hyperparameters"]["eps_high"].get<double>(), 0.28);
  EXPECT_EQ(server.post("/v1/training-jobs",
                        R"({"method": "grpo", "suite": "b", "base_model": "kforge-tiny", "hyperparameters": {"eps_low": 0.3, "eps_high": 0.1}})",
                        server.submit).status, 422);

  // Metrics and events as a training worker writes them.
  {
    auto conn = kforge::db::connect(server.database.url());
    for (int step = 0; step < 5; ++step) {
      kforge::db::training_metric_insert(*conn, sft_id, step, json{{"loss", 2.0 - 0.1 * step}}.dump());
    }
    kforge::db::training_event_insert(*conn, sft_id, "info", "started");
    kforge::db::training_event_insert(*conn, sft_id, "info", "checkpoint saved", R"({"step": 4})");
  }
  auto steps = collect(server, "/v1/training-jobs/" + std::to_string(sft_id) + "/metrics", 2);
  ASSERT_EQ(steps.size(), 5u);
  EXPECT_EQ(steps[0]["step"], 0);
  EXPECT_DOUBLE_EQ(steps[4]["metrics"]["loss"].get<double>(), 1.6);
  auto events = collect(server, "/v1/training-jobs/" + std::to_string(sft_id) + "/events", 1);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1]["message"], "checkpoint saved");
  EXPECT_EQ(server.get("/v1/training-jobs/" + std::to_string(sft_id)).status, 200);
  EXPECT_EQ(collect(server, "/v1/training-jobs", 10).size(), 2u);
  EXPECT_EQ(server.post("/v1/training-jobs/" + std::to_string(sft_id) + "/cancel", "", server.submit).status, 200);

  // Evaluations: job, then the metrics table once the evaluator stores it; models leaderboard.
  EXPECT_EQ(server.post("/v1/evaluations", R"({"model": "ghost", "suite": "heldout"})", server.submit).status, 422);
  auto eval = server.post("/v1/evaluations", R"({"model": "kforge-tiny@1", "suite": "heldout"})", server.submit);
  ASSERT_EQ(eval.status, 202) << eval.body;
  int64_t eval_id = body_of(eval)["id"];
  EXPECT_TRUE(body_of(eval)["metrics"].is_null());
  {
    auto conn = kforge::db::connect(server.database.url());
    kforge::db::EvaluationRecord record;
    record.job_id = eval_id;
    record.model_id = model["id"];
    record.suite = "heldout";
    record.device = "pocl-cpu";
    record.metrics_json = R"({"compile_rate": 0.9, "fast_0": 0.6, "fast_1": 0.3, "fast_1_5": 0.1, "fast_2": 0.05, "geomean_speedup": 1.2})";
    kforge::db::evaluation_insert(*conn, record);
  }
  json evaluated = body_of(server.get("/v1/evaluations/" + std::to_string(eval_id)));
  EXPECT_DOUBLE_EQ(evaluated["metrics"]["fast_1"].get<double>(), 0.3);
  json board = body_of(server.get("/v1/leaderboard/models"));
  ASSERT_EQ(board["data"].size(), 1u);
  EXPECT_EQ(board["data"][0]["model"], "kforge-tiny@1");
  EXPECT_DOUBLE_EQ(board["data"][0]["metrics"]["fast_0"].get<double>(), 0.6);
  EXPECT_EQ(body_of(server.get("/v1/leaderboard/models?suite=other"))["data"].size(), 0u);
  EXPECT_EQ(server.get("/v1/generations/" + std::to_string(eval_id)).status, 404) << "ids are per resource kind";

  auto jobs = collect(server, "/v1/jobs", 2);
  EXPECT_EQ(jobs.size(), 3u);
  EXPECT_EQ(body_of(server.get("/v1/jobs?kind=train_sft"))["data"].size(), 1u);
  EXPECT_EQ(server.get("/v1/jobs?kind=bake").status, 400);
}

TEST(ApiResources, OpsLeaderboardIsBestPerOpTargetDeviceWithStablePages) {
  KFORGE_REQUIRE_DB();
  ApiServer server;
  std::vector<int64_t> op_ids;
  {
    auto conn = kforge::db::connect(server.database.url());
    for (int op_idx = 0; op_idx < 5; ++op_idx) {
      kforge::db::OpRecord op;
      op.name = "op" + std::to_string(op_idx);
      op.source = "def forward(x: Tensor) -> Tensor:\n    return x\n";
      op.spec_json = "{}";
      op.spec_sha256 = std::to_string(op_idx);
      op_ids.push_back(kforge::db::op_insert(*conn, op).id);
    }
    for (int op_idx = 0; op_idx < 5; ++op_idx) {
      for (double speedup : {1.1, 2.0 + op_idx, 1.5}) {
        kforge::db::candidate_insert(*conn, candidate(100 + op_idx, op_ids[op_idx], "correct", speedup));
      }
      kforge::db::candidate_insert(*conn, candidate(100 + op_idx, op_ids[op_idx], "correct", 1.2, "other-device"));
      kforge::db::candidate_insert(*conn, candidate(100 + op_idx, op_ids[op_idx], "wrong_output", std::nullopt));
      auto flagged = candidate(100 + op_idx, op_ids[op_idx], "correct", 99.0);
      flagged.flagged = true;
      kforge::db::candidate_insert(*conn, flagged);
    }
  }
  json full = body_of(server.get("/v1/leaderboard/ops?limit=100"));
  ASSERT_EQ(full["data"].size(), 10u) << "5 ops x 2 devices";
  for (const auto& row : full["data"]) {
    int op_idx = static_cast<int>(row["op_id"].get<int64_t>() - op_ids[0]);
    double expected = row["device"] == "pocl-cpu" ? 2.0 + op_idx : 1.2;
    EXPECT_DOUBLE_EQ(row["speedup"].get<double>(), expected) << row.dump();
  }
  auto paged = collect(server, "/v1/leaderboard/ops", 3);
  ASSERT_EQ(paged.size(), full["data"].size());
  for (size_t row_idx = 0; row_idx < paged.size(); ++row_idx) EXPECT_EQ(paged[row_idx], full["data"][row_idx]);
  EXPECT_EQ(body_of(server.get("/v1/leaderboard/ops?target=cuda"))["data"].size(), 0u);
  EXPECT_EQ(server.get("/v1/leaderboard/ops?after=nothex").status, 400);
}

TEST(ApiResources, WorkersShowHeartbeatsToAdmins) {
  KFORGE_REQUIRE_DB();
  ApiServer server;
  {
    auto conn = kforge::db::connect(server.database.url());
    kforge::db::worker_register(*conn, {"gpu-host-1", 4242, "NVIDIA H100", "0.1.0", 2});
    int64_t stopped = kforge::db::worker_register(*conn, {"old-host", 1, "pocl", "0.1.0", 1});
    kforge::db::worker_stop(*conn, stopped);
  }
  auto workers = collect(server, "/v1/workers", 1, server.admin);
  ASSERT_EQ(workers.size(), 2u);
  EXPECT_EQ(workers[0]["host"], "old-host");
  EXPECT_FALSE(workers[0]["alive"].get<bool>());
  EXPECT_EQ(workers[1]["host"], "gpu-host-1");
  EXPECT_TRUE(workers[1]["alive"].get<bool>());
  EXPECT_EQ(workers[1]["slots"], 2);
  EXPECT_TRUE(workers[1]["running_job_ids"].is_array());
}

// Issue 18: an admin removes an op (and its candidates, so it leaves the leaderboard)
// and archives a model version (no longer resolved by name, its files not served).
TEST(ApiResources, AdminDeletesOpsAndArchivesModelVersions) {
  KFORGE_REQUIRE_DB();
  ApiServer server({"--leaderboard-cache-ms", "0"});
  int64_t op_id = body_of(server.post("/v1/ops", kforge::test::sample_op("doomed"), server.submit))["id"];
  std::string op_path = "/v1/ops/" + std::to_string(op_id);
  auto gen = server.post("/v1/generations", json{{"op_id", op_id}, {"samples", 3}}.dump(), server.submit);
  ASSERT_EQ(gen.status, 202) << gen.body;
  int64_t gen_id = body_of(gen)["id"];
  {
    auto conn = kforge::db::connect(server.database.url());
    kforge::db::candidate_insert(*conn, candidate(gen_id, op_id, "correct", 2.0));
    kforge::db::candidate_insert(*conn, candidate(gen_id, op_id, "wrong_output", std::nullopt));
  }
  ASSERT_EQ(body_of(server.get("/v1/leaderboard/ops"))["data"].size(), 1u);

  EXPECT_EQ(server.del(op_path).status, 401);
  EXPECT_EQ(server.del(op_path, server.submit).status, 403) << "deleting is for admins";
  auto busy = server.del(op_path, server.admin);
  EXPECT_EQ(busy.status, 409) << "a queued generation keeps its op";
  EXPECT_NE(busy.body.find("cancel them first"), std::string::npos) << busy.body;
  EXPECT_EQ(server.get(op_path).status, 200);
  ASSERT_EQ(server.post("/v1/generations/" + std::to_string(gen_id) + "/cancel", "", server.submit).status, 200);

  auto deleted = server.del(op_path, server.admin);
  ASSERT_EQ(deleted.status, 200) << deleted.body;
  EXPECT_TRUE(body_of(deleted)["deleted"].get<bool>());
  EXPECT_EQ(body_of(deleted)["candidates_deleted"], 2);
  EXPECT_EQ(server.get(op_path).status, 404);
  EXPECT_EQ(body_of(server.get("/v1/leaderboard/ops"))["data"].size(), 0u) << "its kernels leave the leaderboard";
  EXPECT_EQ(server.get("/v1/generations/" + std::to_string(gen_id)).status, 200) << "the finished job keeps its row";
  EXPECT_EQ(server.del(op_path, server.admin).status, 404);
  EXPECT_EQ(server.del("/v1/ops/notanid", server.admin).status, 404);

  // Two versions of a model with a file; archive the newer one.
  auto dir = std::filesystem::temp_directory_path() / ("kforge-archive-model-" + std::to_string(server.port));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << R"({"model_type": "qwen2", "hidden_size": 8})";
  std::vector<int64_t> versions;
  for (int version = 1; version <= 2; ++version) {
    auto made = server.post("/v1/models", json{{"name", "retired"}, {"path", dir.string()}}.dump(), server.admin);
    ASSERT_EQ(made.status, 201) << made.body;
    versions.push_back(body_of(made)["id"]);
  }
  std::string v2_path = "/v1/models/" + std::to_string(versions[1]);
  ASSERT_EQ(server.get(v2_path + "/files/config.json", server.submit).status, 200);
  EXPECT_EQ(server.del(v2_path, server.submit).status, 403);
  auto archived = server.del(v2_path, server.admin);
  ASSERT_EQ(archived.status, 200) << archived.body;
  EXPECT_EQ(body_of(archived)["state"], "archived");
  EXPECT_EQ(body_of(server.get(v2_path))["state"], "archived") << "still readable";
  EXPECT_EQ(server.get(v2_path + "/files/config.json", server.submit).status, 404) << "files no longer served";
  EXPECT_EQ(server.post("/v1/generations", json{{"op", json::parse(kforge::test::sample_op())},
                                                {"model", "retired@2"}}.dump(), server.submit).status, 422)
      << "an archived version is not resolved by name";
  auto by_name = server.post("/v1/generations", json{{"op", json::parse(kforge::test::sample_op())},
                                                     {"model", "retired"}}.dump(), server.submit);
  ASSERT_EQ(by_name.status, 202) << by_name.body;
  EXPECT_EQ(server.del("/v1/models/987654", server.admin).status, 404);
  std::filesystem::remove_all(dir);
}

// `kforge-server models ship DIR` (what `make run` calls on start): each model directory
// becomes version 1 of its name with its files hashed and its provenance's evaluation as
// metrics; a second start changes nothing; a name with any version, even archived, is left
// alone; a directory without config.json is skipped with the reason.
TEST(ModelsShip, RegistersEachShippedModelOnceAndRespectsArchives) {
  KFORGE_REQUIRE_DB();
  ApiServer server;
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("kforge-ship-" + std::to_string(server.port));
  fs::remove_all(dir);
  fs::create_directories(dir / "kforge-shipped");
  fs::create_directories(dir / "notes");
  std::ofstream(dir / "kforge-shipped" / "config.json") << R"({"model_type": "qwen2", "hidden_size": 8})";
  std::ofstream(dir / "kforge-shipped" / "model.safetensors") << "weights";
  std::ofstream(dir / "kforge-shipped" / "provenance.json") << R"({"evaluation": {"pass_at_1": 0.25}, "steps": 3})";
  std::ofstream(dir / "notes" / "README.md") << "not a model";
  auto ship = [&] {
    auto [code, output] = kforge::run_command({kforge::test::bin_path("kforge-server"), "--database-url",
                                               server.database.url(), "models", "ship", dir.string()});
    EXPECT_EQ(code, 0) << output;
    return output;
  };
  std::string first = ship();
  EXPECT_NE(first.find("registered kforge-shipped: kforge-shipped@1"), std::string::npos) << first;
  EXPECT_NE(first.find("skipped notes: no config.json"), std::string::npos) << first;

  auto shipped = collect(server, "/v1/models", 10);
  ASSERT_EQ(shipped.size(), 1u);
  EXPECT_EQ(shipped[0]["model"], "kforge-shipped@1");
  EXPECT_EQ(shipped[0]["config"]["hidden_size"], 8);
  EXPECT_DOUBLE_EQ(shipped[0]["metrics"]["pass_at_1"].get<double>(), 0.25);
  std::set<std::string> names;
  for (const auto& file : shipped[0]["files"]) names.insert(file["name"].get<std::string>());
  EXPECT_EQ(names, (std::set<std::string>{"config.json", "model.safetensors", "provenance.json"}));
  auto weights = server.get("/v1/models/" + std::to_string(shipped[0]["id"].get<int64_t>()) + "/files/model.safetensors",
                            server.submit);
  EXPECT_EQ(weights.body, "weights");

  std::string second = ship();
  EXPECT_NE(second.find("kept kforge-shipped: kforge-shipped@1 (ready)"), std::string::npos) << second;
  EXPECT_EQ(collect(server, "/v1/models", 10).size(), 1u) << "a second start registers nothing";

  ASSERT_EQ(server.del("/v1/models/" + std::to_string(shipped[0]["id"].get<int64_t>()), server.admin).status, 200);
  std::string third = ship();
  EXPECT_NE(third.find("kept kforge-shipped: kforge-shipped@1 (archived)"), std::string::npos) << third;
  EXPECT_EQ(collect(server, "/v1/models", 10).size(), 1u) << "an archived shipped model stays archived";
  fs::remove_all(dir);
}

TEST(ApiResources, ErrorPathsOfEveryResource) {
  KFORGE_REQUIRE_DB();
  ApiServer server;
  // Models: bad directory, unknown fields, duplicate version, unknown ids.
  auto not_dir = server.post("/v1/models", R"({"name": "m", "path": "/definitely/not/here"})", server.admin);
  EXPECT_EQ(not_dir.status, 422);
  EXPECT_EQ(body_of(not_dir)["errors"][0]["field"], "path");
  EXPECT_EQ(server.post("/v1/models", R"({"name": "m", "path": "/tmp", "colour": 1})", server.admin).status, 422);
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("kforge-model-dup-" + std::to_string(server.port));
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << "{}";
  std::string body = json{{"name", "dup"}, {"version", 3}, {"path", dir.string()}}.dump();
  EXPECT_EQ(server.post("/v1/models", body, server.admin).status, 201);
  EXPECT_EQ(server.post("/v1/models", body, server.admin).status, 409);
  fs::remove_all(dir);
  EXPECT_EQ(server.get("/v1/models/0").status, 404);
  EXPECT_EQ(server.get("/v1/models/12345").status, 404);
  EXPECT_EQ(server.get("/v1/models/12345/files/config.json", server.submit).status, 404);

  // Jobs of every kind: unknown ids, bad cursors, cancel paths.
  for (const std::string& base : {"/v1/generations/", "/v1/training-jobs/", "/v1/evaluations/"}) {
    EXPECT_EQ(server.get(base + "999").status, 404) << base;
    EXPECT_EQ(server.post(base + "999/cancel", "", server.submit).status, 404) << base;
  }
  EXPECT_EQ(server.get("/v1/training-jobs/999/metrics").status, 404);
  EXPECT_EQ(server.get("/v1/training-jobs/999/events").status, 404);
  auto sft = body_of(server.post("/v1/training-jobs", R"({"method": "sft", "dataset": "/data/pairs.jsonl"})",
                                 server.submit));
  std::string sft_path = "/v1/training-jobs/" + std::to_string(sft["id"].get<int64_t>());
  EXPECT_EQ(sft["dataset"], "/data/pairs.jsonl");
  EXPECT_EQ(server.get(sft_path + "/metrics?after=minus").status, 400);
  EXPECT_EQ(server.get(sft_path + "/events?after=-1").status, 400);
  EXPECT_EQ(server.get("/v1/evaluations?after=bad").status, 400);
  EXPECT_EQ(server.post("/v1/evaluations", R"({"model": "m@x", "suite": "s"})", server.submit).status, 422);
  EXPECT_EQ(server.post("/v1/evaluations", R"({"suite": "s"})", server.submit).status, 422);
  EXPECT_EQ(server.post("/v1/evaluations", R"({"model": "dup@3", "suite": "s"})", "").status, 401);
  auto eval = body_of(server.post("/v1/evaluations", R"({"model": "dup@3", "suite": "s", "target": "cuda"})",
                                  server.submit));
  EXPECT_EQ(eval["target"], "cuda");
  std::string eval_cancel = "/v1/evaluations/" + std::to_string(eval["id"].get<int64_t>()) + "/cancel";
  EXPECT_EQ(server.post(eval_cancel, "", server.submit).status, 200);
  EXPECT_EQ(server.post(eval_cancel, "", server.submit).status, 409);

  // Tokens: pagination over several, bad ids.
  for (int token_idx = 0; token_idx < 3; ++token_idx) {
    ASSERT_EQ(server.post("/v1/tokens", R"({"scopes": ["submit"]})", server.admin).status, 201);
  }
  EXPECT_EQ(collect(server, "/v1/tokens", 2, server.admin).size(), 5u) << "2 from the fixture + 3";
  EXPECT_EQ(server.post("/v1/tokens/abc/revoke", "", server.admin).status, 404);
  EXPECT_EQ(server.post("/v1/tokens", R"({"scopes": []})", server.admin).status, 422);
  EXPECT_EQ(server.post("/v1/tokens", R"({"scopes": "admin"})", server.admin).status, 422);
  EXPECT_EQ(server.get("/v1/workers?limit=500", server.admin).status, 400);
}

TEST(ApiResources, LeaderboardPagesAreCachedForAtMostTheTtl) {
  KFORGE_REQUIRE_DB();
  ApiServer server({"--leaderboard-cache-ms", "500"});
  EXPECT_EQ(body_of(server.get("/v1/leaderboard/ops"))["data"].size(), 0u);
  {
    auto conn = kforge::db::connect(server.database.url());
    kforge::db::OpRecord op;
    op.name = "cached_op";
    op.source = "s";
    op.spec_json = "{}";
    op.spec_sha256 = "c";
    int64_t op_id = kforge::db::op_insert(*conn, op).id;
    kforge::db::candidate_insert(*conn, candidate(1, op_id, "correct", 1.7));
  }
  EXPECT_EQ(body_of(server.get("/v1/leaderboard/ops"))["data"].size(), 0u) << "served from the cache";
  EXPECT_EQ(body_of(server.get("/v1/leaderboard/ops?limit=5"))["data"].size(), 1u) << "another page key is fresh";
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  EXPECT_EQ(body_of(server.get("/v1/leaderboard/ops"))["data"].size(), 1u) << "refreshed after the TTL";
}

TEST(ApiResources, GenerationsAreRoutedByTargetAndDeviceAndSayWhatTheyWaitFor) {
  KFORGE_REQUIRE_DB();
  ApiServer server;
  int64_t op_id = body_of(server.post("/v1/ops", kforge::test::sample_op(), server.submit))["id"];
  auto triton = server.post("/v1/generations", json{{"op_id", op_id}, {"target", "triton"}}.dump(), server.submit);
  ASSERT_EQ(triton.status, 202) << triton.body;
  json gen = body_of(triton);
  EXPECT_EQ(gen["device"], "auto");
  ASSERT_TRUE(gen.contains("waiting_for")) << gen.dump();
  EXPECT_NE(gen["waiting_for"].get<std::string>().find("target:triton"), std::string::npos) << gen["waiting_for"];
  EXPECT_NE(gen["waiting_for"].get<std::string>().find("device:gpu"), std::string::npos) << gen["waiting_for"];

  auto conn = kforge::db::connect(server.database.url());
  auto job = kforge::db::job_get(*conn, gen["id"].get<int64_t>());
  ASSERT_TRUE(job);
  EXPECT_EQ(job->required_tags, (std::vector<std::string>{"target:triton", "device:gpu"}));

  // A CPU worker registers: still nothing can run the triton job; a GPU worker can.
  kforge::db::WorkerInfo cpu{"cpu-host", 1, "pocl", "0.1.0", 1, {"target:opencl", "device:cpu"}};
  kforge::db::worker_register(*conn, cpu);
  EXPECT_TRUE(body_of(server.get("/v1/generations/" + std::to_string(gen["id"].get<int64_t>()))).contains("waiting_for"));
  kforge::db::WorkerInfo gpu{"gpu-host", 2, "H100", "0.1.0", 1, {"target:opencl", "target:triton", "device:gpu"}};
  kforge::db::worker_register(*conn, gpu);
  EXPECT_FALSE(body_of(server.get("/v1/generations/" + std::to_string(gen["id"].get<int64_t>()))).contains("waiting_for"));

  // cuda and triton run on a GPU only: device cpu is refused naming the field.
  auto refused = server.post("/v1/generations", json{{"op_id", op_id}, {"target", "cuda"}, {"device", "cpu"}}.dump(),
                             server.submit);
  ASSERT_EQ(refused.status, 422) << refused.body;
  EXPECT_NE(refused.body.find("\"device\""), std::string::npos) << refused.body;
  // opencl defaults to the CPU.
  auto opencl = body_of(server.post("/v1/generations", json{{"op_id", op_id}}.dump(), server.submit));
  EXPECT_EQ(kforge::db::job_get(*conn, opencl["id"].get<int64_t>())->required_tags,
            (std::vector<std::string>{"target:opencl", "device:cpu"}));
}
