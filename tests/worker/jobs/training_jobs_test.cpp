// The training and evaluation job runners end to end with every part real: the
// kforge-server binary over HTTP, kforge-worker processes claiming train_sft /
// train_grpo / train_rft / evaluate jobs from PostgreSQL, the teacher compiler and PoCL harness,
// and the kforge CLI. Also: SIGKILL mid-SFT then resume, cancel, bad payloads, and a
// worker with an empty model directory fetching a version's files from the server.
// ctest -R jobs_training_test
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/sha256.h"
#include "db/connection.h"
#include "db/models.h"
#include "db/queue.h"
#include "tests/server/api_fixture.h"
#include "tests/support/processes.h"
#include "tests/support/sft_pairs.h"
#include "worker/harness/devices.h"

using namespace std::chrono_literals;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

// A private data directory for the worker (checkpoints, model versions), removed afterwards.
struct DataDir {
  DataDir() {
    static int counter = 0;
    path = fs::temp_directory_path() / ("kforge-jobs-test-" + std::to_string(getpid()) + "-" + std::to_string(++counter));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~DataDir() { fs::remove_all(path); }
  fs::path path;
};

kforge::Subprocess start_worker(const std::string& database_url, const DataDir& data, const std::string& log_name,
                                std::vector<std::string> extra_args = {}, std::vector<std::string> extra_env = {}) {
  std::vector<std::string> argv = {kforge::test::bin_path("kforge-worker"), "--database-url", database_url, "--poll-s",
                                   "0.5"};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  std::vector<std::string> env = {"KFORGE_DATA_DIR=" + data.path.string(),
                                   "KFORGE_SUITE_DIR=" + kforge::test::source_path("suite")};
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  return kforge::Subprocess::spawn(argv, env, "/tmp/kforge-test-" + log_name + ".log");
}

json body_of(const kforge::test::RawResponse& resp) { return json::parse(resp.body, nullptr, false); }

// Polls GET path until the resource leaves queued/running/retrying, or the timeout passes.
json wait_finished(kforge::test::ApiServer& server, const std::string& path, std::chrono::seconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  json body;
  while (std::chrono::steady_clock::now() < deadline) {
    body = body_of(server.get(path));
    std::string status = body.value("status", "");
    if (status != "queued" && status != "running" && status != "retrying") return body;
    std::this_thread::sleep_for(250ms);
  }
  return body;
}

// Every item of a paginated list.
std::vector<json> collect(kforge::test::ApiServer& server, const std::string& path) {
  std::vector<json> items;
  std::string after;
  for (int page = 0; page < 100; ++page) {
    json body = body_of(server.get(path + (path.find('?') == std::string::npos ? "?" : "&") + "limit=100" +
                                   (after.empty() ? "" : "&after=" + after)));
    for (const auto& item : body["data"]) items.push_back(item);
    if (!body.value("has_more", false)) break;
    after = body["next_cursor"].get<std::string>();
  }
  return items;
}

// Synthetic prompt/completion pairs in the kforge-tiny template, long enough that
// a step of the micro model takes measurable time (the kill test needs a window).
std::string write_pairs(const DataDir& data, int count, int body_lines) {
  return kforge::test::write_sft_pairs((data.path / "pairs.jsonl").string(), count, body_lines);
}

int max_metric_step(const std::string& database_url, int64_t job_id) {
  auto conn = kforge::db::connect(database_url);
  auto rows = kforge::db::training_metric_list(*conn, job_id, -1, 100000);
  return rows.empty() ? 0 : rows.back().step;
}

// The real `kforge` binary against the test server; `token` for commands that need a scope.
std::pair<int, std::string> kforge_cli(const kforge::test::ApiServer& server, const std::vector<std::string>& args,
                                       const std::string& token = "") {
  std::vector<std::string> argv = {"env", "KFORGE_URL=http://127.0.0.1:" + std::to_string(server.port),
                                   "KFORGE_TOKEN=" + token, kforge::test::bin_path("kforge")};
  argv.insert(argv.end(), args.begin(), args.end());
  return kforge::run_command(argv);
}

bool has_event(kforge::test::ApiServer& server, int64_t job_id, const std::string& prefix) {
  for (const auto& event : collect(server, "/v1/training-jobs/" + std::to_string(job_id) + "/events")) {
    if (event["message"].get<std::string>().rfind(prefix, 0) == 0) return true;
  }
  return false;
}

// SFT that can learn: kforge-micro trained 120 steps on the teacher kernel of the first
// train-split op, so it writes that kernel; returns the finished training job.
json memorise_first_train_op(kforge::test::ApiServer& server) {
  json sft_request = {{"method", "sft"},
                      {"suite", "builtin"},
                      {"output_model", "kforge-micro"},
                      {"hyperparameters",
                       {{"max_steps", 120}, {"batch_size", 1}, {"micro_batch", 1}, {"learning_rate", 0.01},
                        {"warmup_steps", 0}, {"eval_every", 0}, {"checkpoint_every", 0}, {"vocab_size", 300},
                        {"limit_ops", 1}, {"variants_per_op", 1}, {"max_check_elements", 4096}, {"check_trials", 1}}}};
  auto sft_created = server.post("/v1/training-jobs", sft_request.dump(), server.submit);
  EXPECT_EQ(sft_created.status, 202) << sft_created.body;
  if (sft_created.status != 202) return json::object();
  return wait_finished(server, "/v1/training-jobs/" + std::to_string(body_of(sft_created)["id"].get<int64_t>()), 300s);
}

}  // namespace

// POST SFT (dataset built from the suite by the teacher) -> metrics and model versions
// -> POST GRPO from that version -> POST an evaluation -> the model leaderboard and CLI.
TEST(TrainingJobs, SftThenGrpoThenEvaluationThroughApi) {
  KFORGE_REQUIRE_DB();
  if (kforge::harness::list_devices().empty()) GTEST_SKIP() << "no OpenCL device (install pocl-opencl-icd)";
  kforge::test::ApiServer server;
  DataDir data;
  auto worker = start_worker(server.database.url(), data, "training-e2e-worker");

  json sft_request = {{"method", "sft"},
                      {"suite", "builtin"},
                      {"output_model", "kforge-micro"},
                      {"hyperparameters",
                       {{"max_steps", 4}, {"batch_size", 2}, {"micro_batch", 2}, {"checkpoint_every", 2},
                        {"eval_every", 2}, {"warmup_steps", 0}, {"learning_rate", 0.002}, {"vocab_size", 300},
                        {"limit_ops", 2}, {"variants_per_op", 2}, {"max_check_elements", 4096}, {"check_trials", 1}}}};
  auto sft_created = server.post("/v1/training-jobs", sft_request.dump(), server.submit);
  ASSERT_EQ(sft_created.status, 202) << sft_created.body;
  int64_t sft_id = body_of(sft_created)["id"];
  json sft = wait_finished(server, "/v1/training-jobs/" + std::to_string(sft_id), 300s);
  ASSERT_EQ(sft.value("status", ""), "succeeded") << sft.dump(2);
  EXPECT_EQ(sft["progress"]["step"], 4);
  EXPECT_EQ(sft["progress"]["total_steps"], 4);

  // Per-step metrics: SftStepMetrics::to_json for steps 1..4, val loss on 2 and 4.
  auto metrics = collect(server, "/v1/training-jobs/" + std::to_string(sft_id) + "/metrics");
  ASSERT_EQ(metrics.size(), 4u);
  for (int step = 1; step <= 4; ++step) {
    const json& m = metrics[step - 1];
    EXPECT_EQ(m["step"], step);
    EXPECT_GT(m["metrics"]["loss"].get<double>(), 0.0);
    EXPECT_GT(m["metrics"]["tokens"].get<int>(), 0);
    EXPECT_EQ(m["metrics"]["total_steps"], 4);
  }
  EXPECT_TRUE(metrics[3]["metrics"].contains("checkpoint"));
  EXPECT_TRUE(has_event(server, sft_id, "dataset built"));
  EXPECT_TRUE(has_event(server, sft_id, "checkpoint 2 registered"));

  // The checkpoints at steps 2 and 4 are versions 1 and 2 of kforge-micro; the final one is the job's model.
  int64_t sft_model_id = sft["model_id"].get<int64_t>();
  json sft_model = body_of(server.get("/v1/models/" + std::to_string(sft_model_id)));
  EXPECT_EQ(sft_model["model"], "kforge-micro@2");
  EXPECT_EQ(sft_model["training_job_id"], sft_id);
  EXPECT_EQ(sft_model["state"], "ready");
  EXPECT_TRUE(sft_model["parent_id"].is_null()) << "bootstrapped from scratch";
  EXPECT_EQ(sft_model["metrics"]["step"], 4);
  EXPECT_EQ(sft_model["config"]["hidden_size"], 64) << "the kforge-micro preset";
  std::set<std::string> file_names;
  for (const auto& file : sft_model["files"]) file_names.insert(file["name"].get<std::string>());
  EXPECT_TRUE(file_names.count("config.json") && file_names.count("model.safetensors") && file_names.count("tokenizer.json"))
      << sft_model["files"].dump();
  EXPECT_FALSE(file_names.count("optimizer.pt")) << "optimizer state stays with the checkpoint";
  auto config_file = server.get("/v1/models/" + std::to_string(sft_model_id) + "/files/config.json", server.submit);
  ASSERT_EQ(config_file.status, 200);
  EXPECT_EQ(json::parse(config_file.body)["hidden_size"], 64);
  auto models = collect(server, "/v1/models");
  ASSERT_EQ(models.size(), 2u);
  EXPECT_EQ(models[1]["model"], "kforge-micro@1");
  EXPECT_EQ(models[1]["metrics"]["step"], 2);

  // GRPO from the SFT version, the harness as reward.
  json grpo_request = {{"method", "grpo"},
                       {"suite", "builtin"},
                       {"base_model", "kforge-micro@2"},
                       {"output_model", "kforge-micro"},
                       {"hyperparameters",
                        {{"steps", 2}, {"prompts_per_step", 1}, {"group_size", 2}, {"max_new_tokens", 24},
                         {"limit_ops", 2}, {"time_kernels", 0}, {"check_trials", 1}, {"max_check_elements", 4096},
                         {"checkpoint_every", 0}, {"learning_rate", 0.001},
                         // Issue 17's options, so the runner is seen to wire them.
                         {"advantage", "leave_one_out"}, {"speed_bonus", "among_correct"}, {"kl_coef", 0.01},
                         {"curriculum_every", 1}, {"curriculum_samples", 2}, {"recheck_per_step", 2}}}};
  auto grpo_created = server.post("/v1/training-jobs", grpo_request.dump(), server.submit);
  ASSERT_EQ(grpo_created.status, 202) << grpo_created.body;
  int64_t grpo_id = body_of(grpo_created)["id"];
  json grpo = wait_finished(server, "/v1/training-jobs/" + std::to_string(grpo_id), 300s);
  ASSERT_EQ(grpo.value("status", ""), "succeeded") << grpo.dump(2);
  auto grpo_metrics = collect(server, "/v1/training-jobs/" + std::to_string(grpo_id) + "/metrics");
  ASSERT_EQ(grpo_metrics.size(), 2u);
  for (const auto& row : grpo_metrics) {
    const json& m = row["metrics"];
    EXPECT_EQ(m["samples"], 2);
    int histogram_total = 0;
    for (const auto& [outcome, count] : m["outcomes"].items()) histogram_total += count.get<int>();
    EXPECT_EQ(histogram_total, 2) << "every sample has an outcome: " << m.dump();
    for (const char* key : {"reward_mean", "correct_rate", "rule_violation_rate", "hacking_rate", "suspicious_rate"}) {
      EXPECT_TRUE(m.contains(key) && m[key].is_number()) << key << " missing from " << m.dump();
    }
    for (const char* phase : {"sample", "check", "update"}) {
      EXPECT_TRUE(m["seconds"].contains(phase)) << "seconds per phase: " << m.dump();
    }
    // The hacking watch and the curriculum (re-measured every step here) are in every row.
    EXPECT_EQ(m.value("rules_caught", -1), m["outcomes"].value("rule_violation", 0)) << m.dump();
    EXPECT_LE(m.value("rechecked", -1), std::min(2, m["outcomes"].value("correct", 0))) << m.dump();
    EXPECT_GE(m.value("rechecked", -1), 0) << m.dump();
    ASSERT_TRUE(m.contains("curriculum")) << m.dump();
    EXPECT_GE(m["curriculum"]["tasks"].get<int>(), 1);
    EXPECT_LE(m["curriculum"]["tasks"].get<int>(), 2) << "limit_ops 2";
    EXPECT_GE(m["kl"].get<double>(), 0.0);
  }
  EXPECT_TRUE(has_event(server, grpo_id, "curriculum: ")) << "each refresh is a training event";
  json grpo_model = body_of(server.get("/v1/models/" + std::to_string(grpo["model_id"].get<int64_t>())));
  EXPECT_EQ(grpo_model["model"], "kforge-micro@3");
  EXPECT_EQ(grpo_model["parent_id"], sft_model_id);
  EXPECT_EQ(grpo_model["training_job_id"], grpo_id);
  EXPECT_EQ(grpo_model["metrics"]["method"], "grpo");

  // Evaluate the newest version ("kforge-micro" = @3) on the held-out split.
  json eval_request = {{"model", "kforge-micro"},
                       {"suite", "heldout"},
                       {"settings",
                        {{"samples", 2}, {"limit_ops", 2}, {"max_new_tokens", 24}, {"time_kernels", 0},
                         {"check_trials", 1}, {"max_check_elements", 4096}}}};
  auto eval_created = server.post("/v1/evaluations", eval_request.dump(), server.submit);
  ASSERT_EQ(eval_created.status, 202) << eval_created.body;
  EXPECT_EQ(body_of(eval_created)["settings"]["k"], 2) << "settings echoed with defaults";
  int64_t eval_id = body_of(eval_created)["id"];
  json evaluation = wait_finished(server, "/v1/evaluations/" + std::to_string(eval_id), 300s);
  ASSERT_EQ(evaluation.value("status", ""), "succeeded") << evaluation.dump(2);
  const json& em = evaluation["metrics"];
  for (const char* key : {"compile_rate", "fast_0", "fast_1", "fast_1_5", "fast_2", "geomean_speedup"}) {
    ASSERT_TRUE(em.contains(key) && em[key].is_number()) << key << " missing: " << em.dump();
    EXPECT_GE(em[key].get<double>(), 0.0);
  }
  EXPECT_LE(em["fast_0"].get<double>(), 1.0);
  EXPECT_EQ(em["ops"], 2);
  EXPECT_EQ(em["split"], "heldout");
  int outcome_total = 0;
  for (const auto& [outcome, count] : em["outcomes"].items()) outcome_total += count.get<int>();
  EXPECT_EQ(outcome_total, 4) << "2 ops x 2 samples, each with an outcome";
  ASSERT_EQ(evaluation["tasks"].size(), 2u);
  EXPECT_EQ(evaluation["tasks"][0]["samples"], 2);
  if (evaluation["tasks"][0]["correct"] != 2) {
    EXPECT_TRUE(evaluation["tasks"][0]["first_failure"].is_string()) << "a failing op says why: " << evaluation["tasks"].dump();
  }
  EXPECT_FALSE(evaluation["device"].get<std::string>().empty());

  // The model leaderboard shows it, through the API and the CLI.
  auto board = collect(server, "/v1/leaderboard/models");
  ASSERT_EQ(board.size(), 1u);
  EXPECT_EQ(board[0]["model"], "kforge-micro@3");
  EXPECT_EQ(board[0]["suite"], "heldout");
  EXPECT_EQ(board[0]["evaluation_id"], eval_id);
  EXPECT_DOUBLE_EQ(board[0]["metrics"]["fast_0"].get<double>(), em["fast_0"].get<double>());
  auto [cli_code, cli_out] = kforge_cli(server, {"leaderboard", "--models"});
  EXPECT_EQ(cli_code, 0) << cli_out;
  EXPECT_NE(cli_out.find("kforge-micro@3"), std::string::npos) << cli_out;
  EXPECT_NE(cli_out.find("heldout"), std::string::npos) << cli_out;

  // Metrics that can tell: pass@1 with its 95% bootstrap interval over ops, fast_p as
  // KernelBench defines it (fast_0 is correctness, untimed here so fast_1 is 0), the
  // rule-violation rate from the same outcomes, no torch.compile numbers on PoCL.
  EXPECT_DOUBLE_EQ(em["pass_at_1"].get<double>(), em["fast_0"].get<double>());
  ASSERT_TRUE(em["intervals"]["pass_at_1"].is_array()) << em.dump();
  EXPECT_LE(em["intervals"]["pass_at_1"][0].get<double>(), em["pass_at_1"].get<double>());
  EXPECT_GE(em["intervals"]["pass_at_1"][1].get<double>(), em["pass_at_1"].get<double>());
  EXPECT_DOUBLE_EQ(em["fast_p"]["0"].get<double>(), em["fast_0"].get<double>());
  EXPECT_DOUBLE_EQ(em["fast_p"]["1"].get<double>(), 0.0) << "untimed: nothing is faster";
  EXPECT_TRUE(em["fast_p_vs_compile"].is_null()) << "PoCL has no torch.compile baseline";
  EXPECT_DOUBLE_EQ(em["rule_violation_rate"].get<double>(), em["outcomes"].value("rule_violation", 0) / 4.0);
  EXPECT_EQ(em["bootstrap"]["resamples"], 10000);
  EXPECT_TRUE(evaluation["tasks"][0]["fast_p"].is_object());

  // The SFT version (@2) through the CLI, then the two compared op by op.
  auto [start_code, start_out] =
      kforge_cli(server, {"eval", "start", "kforge-micro@2", "heldout", "samples=2", "limit_ops=2", "max_new_tokens=24",
                          "time_kernels=0", "check_trials=1", "max_check_elements=4096", "--wait", "--poll-s", "0.5",
                          "--timeout-s", "300"},
                 server.submit);
  worker.signal(SIGTERM);
  worker.wait_for(30s);
  ASSERT_EQ(start_code, 0) << start_out;
  EXPECT_NE(start_out.find("kforge-micro@2"), std::string::npos) << start_out;
  EXPECT_NE(start_out.find("pass@1"), std::string::npos) << start_out;
  auto evaluations = collect(server, "/v1/evaluations");
  ASSERT_EQ(evaluations.size(), 2u);
  int64_t sft_eval_id = evaluations[0]["id"];  // newest first
  ASSERT_NE(sft_eval_id, eval_id);
  json sft_tasks = evaluations[0]["tasks"];
  auto compared = server.get("/v1/evaluations/" + std::to_string(eval_id) + "/compare?baseline=" + std::to_string(sft_eval_id));
  ASSERT_EQ(compared.status, 200) << compared.body;
  json cmp = json::parse(compared.body);
  EXPECT_EQ(cmp["ops_compared"], 2);
  const json& pass1 = cmp["metrics"]["pass_at_1"];
  double mean_delta = 0;
  for (size_t op_idx = 0; op_idx < 2; ++op_idx) {
    ASSERT_EQ(cmp["per_op"][op_idx]["op"], sft_tasks[op_idx]["op"]);
    double delta = evaluation["tasks"][op_idx]["pass_at_1"].get<double>() - sft_tasks[op_idx]["pass_at_1"].get<double>();
    EXPECT_DOUBLE_EQ(cmp["per_op"][op_idx]["pass_at_1"]["delta"].get<double>(), delta);
    mean_delta += delta / 2;
  }
  EXPECT_DOUBLE_EQ(pass1["difference"]["value"].get<double>(), mean_delta);
  EXPECT_LE(pass1["difference"]["ci"][0].get<double>(), mean_delta);
  EXPECT_GE(pass1["difference"]["ci"][1].get<double>(), mean_delta);
  EXPECT_EQ(pass1["intervals_overlap"].get<bool>(),
            pass1["baseline"]["ci"][0] <= pass1["evaluation"]["ci"][1] && pass1["evaluation"]["ci"][0] <= pass1["baseline"]["ci"][1]);
  auto [cmp_code, cmp_out] = kforge_cli(server, {"eval", "compare", std::to_string(sft_eval_id), std::to_string(eval_id)});
  EXPECT_EQ(cmp_code, 0) << cmp_out;
  EXPECT_NE(cmp_out.find("2 ops in common"), std::string::npos) << cmp_out;
  EXPECT_NE(cmp_out.find("pass_at_1"), std::string::npos) << cmp_out;
}

// SFT that can learn: one train-split op's teacher kernel, memorised by kforge-micro.
// The evaluation then finds the model's own kernels correct (fast_0 = 1, timed), the
// model leaderboard shows it, and a generation with that model samples the kernel
// from the policy (not the teacher) and returns it as the best candidate.
TEST(TrainingJobs, TrainedModelWritesCorrectKernelsForEvaluationAndGeneration) {
  KFORGE_REQUIRE_DB();
  if (kforge::harness::list_devices().empty()) GTEST_SKIP() << "no OpenCL device (install pocl-opencl-icd)";
  kforge::test::ApiServer server;
  DataDir data;
  auto worker = start_worker(server.database.url(), data, "training-learn-worker");
  json sft = memorise_first_train_op(server);
  ASSERT_EQ(sft.value("status", ""), "succeeded") << sft.dump(2);
  EXPECT_LT(sft["result"]["final_loss"].get<double>(), 0.2) << "one pair, 120 steps: memorised";

  // The op it learned is the first of the train split; evaluate on that split, near-greedy.
  json eval_request = {{"model", sft["result"]["model"]},
                       {"suite", "builtin:train"},
                       {"settings",
                        {{"samples", 2}, {"limit_ops", 1}, {"temperature", 0.01}, {"max_new_tokens", 400},
                         {"check_trials", 1}, {"max_check_elements", 4096}, {"time_kernels", 1}}}};
  auto eval_created = server.post("/v1/evaluations", eval_request.dump(), server.submit);
  ASSERT_EQ(eval_created.status, 202) << eval_created.body;
  json evaluation = wait_finished(server, "/v1/evaluations/" + std::to_string(body_of(eval_created)["id"].get<int64_t>()), 300s);
  ASSERT_EQ(evaluation.value("status", ""), "succeeded") << evaluation.dump(2);
  const json& em = evaluation["metrics"];
  EXPECT_DOUBLE_EQ(em["compile_rate"].get<double>(), 1.0) << evaluation["tasks"].dump();
  EXPECT_DOUBLE_EQ(em["fast_0"].get<double>(), 1.0) << evaluation["tasks"].dump();
  EXPECT_EQ(em["ops_with_correct"], 1);
  EXPECT_GT(evaluation["tasks"][0]["best_speedup"].get<double>(), 0.0) << "correct samples are timed";
  EXPECT_GT(em["geomean_speedup"].get<double>(), 0.0);
  auto board = collect(server, "/v1/leaderboard/models");
  ASSERT_EQ(board.size(), 1u);
  EXPECT_EQ(board[0]["suite"], "builtin:train");
  EXPECT_DOUBLE_EQ(board[0]["metrics"]["fast_0"].get<double>(), 1.0);

  // A generation of that op with the trained model: the teacher's first two schedules, then
  // the model's three samples.
  json op = json::parse(std::ifstream(kforge::test::source_path("suite/level1/abs.json")));
  for (const char* suite_field : {"split", "level", "category"}) op.erase(suite_field);
  json generation_request = {{"op", op}, {"samples", 3}, {"model", "kforge-micro"}, {"time_budget_s", 300}};
  auto generation_created = server.post("/v1/generations", generation_request.dump(), server.submit);
  ASSERT_EQ(generation_created.status, 202) << generation_created.body;
  json generation =
      wait_finished(server, "/v1/generations/" + std::to_string(body_of(generation_created)["id"].get<int64_t>()), 300s);
  worker.signal(SIGTERM);
  worker.wait_for(30s);
  ASSERT_EQ(generation.value("status", ""), "succeeded") << generation.dump(2);
  EXPECT_EQ(generation["result"]["generator"], "policy") << generation.dump(2);
  EXPECT_EQ(generation["result"]["proposed_by_generator"], (json{{"teacher", 2}, {"policy", 3}})) << generation.dump(2);
  const json& best_generator = generation["result"]["best_generator"];
  if (!best_generator.is_null()) EXPECT_TRUE(best_generator == "teacher" || best_generator == "policy");
  // The trained model's kernels are correct. Whether one is ranked `best` depends on its
  // timing: on a loaded machine a correct kernel can time > 10x eager and be flagged
  // suspicious (kept, never ranked), which made this assertion flaky in CI.
  int policy_correct = 0;
  auto generation_candidates =
      collect(server, "/v1/generations/" + std::to_string(generation["id"].get<int64_t>()) + "/candidates");
  ASSERT_EQ(generation_candidates.size(), 5u);
  for (const auto& candidate : generation_candidates) {
    const bool from_model = candidate["details"].value("generator", "") == "policy";
    EXPECT_EQ(from_model, candidate["sample_idx"].get<int>() >= 2)
        << "the teacher's two come first (checked while the model samples): " << candidate.dump();
    EXPECT_EQ(candidate["model_id"].is_null(), !from_model) << "a model's sample names its version: " << candidate.dump();
    if (from_model && candidate["outcome"] == "correct") ++policy_correct;
  }
  EXPECT_GE(policy_correct, 1) << "the memorised op: the model's own samples are correct";
  if (!generation["best"].is_null()) EXPECT_EQ(generation["best"]["outcome"], "correct");
  EXPECT_EQ(generation["model_id"], sft["model_id"]);
}

// Expert iteration end to end: SFT memorises one train op, then `kforge train rft` from
// that version samples, keeps the kernels the harness verifies, fine-tunes on them and
// registers one version per round; metrics rows per round; a bad rft request is a 422.
TEST(TrainingJobs, RftKeepsVerifiedKernelsAndRegistersARoundPerVersion) {
  KFORGE_REQUIRE_DB();
  if (kforge::harness::list_devices().empty()) GTEST_SKIP() << "no OpenCL device (install pocl-opencl-icd)";
  kforge::test::ApiServer server;
  DataDir data;
  auto worker = start_worker(server.database.url(), data, "training-rft-worker");
  json sft = memorise_first_train_op(server);
  ASSERT_EQ(sft.value("status", ""), "succeeded") << sft.dump(2);
  int64_t sft_model_id = sft["model_id"].get<int64_t>();

  // Without a base model the API refuses it, naming the field.
  auto refused = server.post("/v1/training-jobs", json{{"method", "rft"}, {"suite", "builtin"}}.dump(), server.submit);
  EXPECT_EQ(refused.status, 422) << refused.body;
  EXPECT_NE(refused.body.find("base_model"), std::string::npos) << refused.body;

  auto [cli_code, cli_out] = kforge_cli(
      server, {"train", "rft", "--token", server.submit, "--suite", "builtin", "--base-model", sft["result"]["model"].get<std::string>(), "--json",
               "rounds=2", "samples_per_task=3", "max_kept_per_task=2", "steps_per_round=2", "batch_size=1",
               "micro_batch=1", "temperature=0.01", "max_new_tokens=400", "learning_rate=0.001", "warmup_steps=0",
               "limit_ops=1", "check_trials=1", "max_check_elements=4096"});
  ASSERT_EQ(cli_code, 0) << cli_out;
  json created = json::parse(cli_out, nullptr, false);
  ASSERT_TRUE(created.is_object()) << cli_out;
  EXPECT_EQ(created["method"], "rft") << created.dump(2);
  EXPECT_EQ(created["hyperparameters"]["samples_per_task"], 3);
  int64_t rft_id = created["id"].get<int64_t>();
  json rft = wait_finished(server, "/v1/training-jobs/" + std::to_string(rft_id), 300s);
  worker.signal(SIGTERM);
  worker.wait_for(30s);
  ASSERT_EQ(rft.value("status", ""), "succeeded") << rft.dump(2);
  EXPECT_GE(rft["result"]["kept"].get<int>(), 1) << "the memorised kernel is sampled, verified and kept: " << rft.dump(2);

  auto metrics = collect(server, "/v1/training-jobs/" + std::to_string(rft_id) + "/metrics");
  ASSERT_EQ(metrics.size(), 2u);
  for (int round = 1; round <= 2; ++round) {
    const json& m = metrics[round - 1]["metrics"];
    EXPECT_EQ(m["round"], round);
    EXPECT_EQ(m["samples"], 3);
    int outcome_total = 0;
    for (const auto& [outcome, count] : m["outcomes"].items()) outcome_total += count.get<int>();
    EXPECT_EQ(outcome_total, 3) << m.dump();
    EXPECT_GE(m["pool_size"].get<int>(), 1) << m.dump();
    EXPECT_EQ(m["sft_steps"], 2) << "a non-empty pool is fine-tuned on: " << m.dump();
  }
  EXPECT_GT(metrics[0]["metrics"]["correct_rate"].get<double>(), 0.0);
  EXPECT_LE(metrics[0]["metrics"]["kept_new"].get<int>(), 2) << "at most max_kept_per_task new kernels per op";
  json model = body_of(server.get("/v1/models/" + std::to_string(rft["model_id"].get<int64_t>())));
  EXPECT_EQ(model["model"], "kforge-tiny@2") << "one version per round, under the default output_model";
  EXPECT_EQ(model["parent_id"], sft_model_id);
  EXPECT_EQ(model["training_job_id"], rft_id);
  EXPECT_EQ(model["metrics"]["method"], "rft");
  auto jobs = collect(server, "/v1/jobs?kind=train_rft");
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0]["id"], rft_id);
}

// A worker SIGKILLed mid-SFT: the lease lapses, the job is rescued, a second worker
// resumes from the newest checkpoint and finishes; every step has its metrics row.
TEST(TrainingJobs, SftResumesFromCheckpointAfterSigkill) {
  KFORGE_REQUIRE_DB();
  kforge::test::ApiServer server;
  DataDir data;
  const int total_steps = 30;
  json request = {{"method", "sft"},
                  {"dataset", write_pairs(data, 48, 6)},
                  {"output_model", "kforge-micro"},
                  {"hyperparameters",
                   {{"max_steps", total_steps}, {"batch_size", 8}, {"micro_batch", 8}, {"checkpoint_every", 3},
                    {"eval_every", 0}, {"warmup_steps", 0}, {"vocab_size", 300}, {"learning_rate", 0.002}}}};
  auto created = server.post("/v1/training-jobs", request.dump(), server.submit);
  ASSERT_EQ(created.status, 202) << created.body;
  int64_t job_id = body_of(created)["id"];
  EXPECT_EQ(body_of(created)["max_attempts"], 3) << "a crashed run is retried, and resumes";

  std::vector<std::string> fast_lease = {"--lease-s", "3", "--rescue-s", "0.5", "--backoff-base-s", "0.1"};
  auto first = start_worker(server.database.url(), data, "training-kill-worker1", fast_lease);
  // Kill after the checkpoint at step 3 and a few steps past it, well before the end.
  int killed_at = 0;
  auto deadline = std::chrono::steady_clock::now() + 240s;
  while (std::chrono::steady_clock::now() < deadline) {
    killed_at = max_metric_step(server.database.url(), job_id);
    if (killed_at >= 5) break;
    std::this_thread::sleep_for(20ms);
  }
  first.signal(SIGKILL);
  first.wait_for(10s);
  ASSERT_GE(killed_at, 5) << "training never reached step 5";
  ASSERT_LT(killed_at, total_steps - 10) << "the job nearly finished before the kill; make the steps heavier";

  auto second = start_worker(server.database.url(), data, "training-kill-worker2", fast_lease);
  json done = wait_finished(server, "/v1/training-jobs/" + std::to_string(job_id), 300s);
  second.signal(SIGTERM);
  second.wait_for(30s);
  ASSERT_EQ(done.value("status", ""), "succeeded") << done.dump(2);
  EXPECT_EQ(done["attempt"], 2);
  int resumed_from = done["result"]["resumed_from"].get<int>();
  EXPECT_GE(resumed_from, 3) << "resumed from a checkpoint, not from scratch";
  EXPECT_LE(resumed_from, killed_at);
  EXPECT_EQ(resumed_from % 3, 0) << "checkpoints are every 3 steps";
  EXPECT_EQ(done["result"]["steps"], total_steps);
  EXPECT_TRUE(has_event(server, job_id, "resumed from checkpoint " + std::to_string(resumed_from)));

  auto metrics = collect(server, "/v1/training-jobs/" + std::to_string(job_id) + "/metrics");
  ASSERT_EQ(metrics.size(), static_cast<size_t>(total_steps)) << "one row per step, redone steps replaced";
  for (int step = 1; step <= total_steps; ++step) EXPECT_EQ(metrics[step - 1]["step"], step);

  // Every checkpoint became a version exactly once (the one written before the kill included).
  auto models = collect(server, "/v1/models");
  ASSERT_EQ(models.size(), static_cast<size_t>(total_steps / 3));
  std::set<int> steps_registered;
  for (const auto& model : models) {
    EXPECT_EQ(model["training_job_id"], job_id);
    steps_registered.insert(model["metrics"]["step"].get<int>());
  }
  EXPECT_EQ(steps_registered.size(), models.size()) << "no step registered twice";
  EXPECT_EQ(done["model_id"], models[0]["id"]) << "the final version is the newest";
}

// GRPO stopped by a worker shutdown (SIGTERM past a short grace) is released, and
// the next worker resumes it from its newest checkpoint (policy + optimizer + step).
TEST(TrainingJobs, GrpoReleasedOnShutdownResumesFromCheckpoint) {
  KFORGE_REQUIRE_DB();
  if (kforge::harness::list_devices().empty()) GTEST_SKIP() << "no OpenCL device (install pocl-opencl-icd)";
  kforge::test::ApiServer server;
  DataDir data;
  std::vector<std::string> short_grace = {"--shutdown-grace-s", "0.2"};
  // A base version: two SFT steps on synthetic pairs.
  json sft_request = {{"method", "sft"},
                      {"dataset", write_pairs(data, 16, 2)},
                      {"output_model", "kforge-micro"},
                      {"hyperparameters", {{"max_steps", 2}, {"batch_size", 4}, {"vocab_size", 300}, {"eval_every", 0},
                                           {"checkpoint_every", 0}}}};
  auto sft_created = server.post("/v1/training-jobs", sft_request.dump(), server.submit);
  ASSERT_EQ(sft_created.status, 202) << sft_created.body;
  auto first = start_worker(server.database.url(), data, "training-grpo-worker1", short_grace);
  json sft = wait_finished(server, "/v1/training-jobs/" + std::to_string(body_of(sft_created)["id"].get<int64_t>()), 120s);
  ASSERT_EQ(sft.value("status", ""), "succeeded") << sft.dump(2);

  // Long enough that the run cannot finish between the SIGTERM and the worker acting on it
  // (a GRPO step of this tiny model can take 0.1 s; 20 steps once finished first).
  const int total_steps = 60;
  json grpo_request = {{"method", "grpo"},
                       {"suite", "builtin"},
                       {"base_model", "kforge-micro@1"},
                       {"output_model", "kforge-micro-grpo"},
                       {"hyperparameters",
                        {{"steps", total_steps}, {"prompts_per_step", 1}, {"group_size", 2}, {"max_new_tokens", 32},
                         {"limit_ops", 3}, {"time_kernels", 0}, {"check_trials", 1}, {"max_check_elements", 4096},
                         {"checkpoint_every", 2}}}};
  auto created = server.post("/v1/training-jobs", grpo_request.dump(), server.submit);
  ASSERT_EQ(created.status, 202) << created.body;
  int64_t job_id = body_of(created)["id"];
  auto deadline = std::chrono::steady_clock::now() + 120s;
  int stopped_at = 0;
  while (std::chrono::steady_clock::now() < deadline && (stopped_at = max_metric_step(server.database.url(), job_id)) < 3) {
    std::this_thread::sleep_for(20ms);
  }
  first.signal(SIGTERM);
  ASSERT_TRUE(first.wait_for(60s).has_value()) << "the worker did not stop";
  ASSERT_GE(stopped_at, 3);
  json released = body_of(server.get("/v1/training-jobs/" + std::to_string(job_id)));
  ASSERT_EQ(released.value("status", ""), "queued") << "released for another worker: " << released.dump(2);
  int steps_before = max_metric_step(server.database.url(), job_id);
  ASSERT_LT(steps_before, total_steps) << "finished before the shutdown; make the run longer";

  auto second = start_worker(server.database.url(), data, "training-grpo-worker2");
  json done = wait_finished(server, "/v1/training-jobs/" + std::to_string(job_id), 400s);
  second.signal(SIGTERM);
  second.wait_for(30s);
  ASSERT_EQ(done.value("status", ""), "succeeded") << done.dump(2);
  int resumed_from = done["result"]["resumed_from"].get<int>();
  EXPECT_GE(resumed_from, 2);
  EXPECT_LE(resumed_from, steps_before);
  EXPECT_EQ(resumed_from % 2, 0);
  EXPECT_TRUE(has_event(server, job_id, "resumed from checkpoint " + std::to_string(resumed_from)));
  auto metrics = collect(server, "/v1/training-jobs/" + std::to_string(job_id) + "/metrics");
  ASSERT_EQ(metrics.size(), static_cast<size_t>(total_steps));
  for (int step = 1; step <= total_steps; ++step) EXPECT_EQ(metrics[step - 1]["metrics"]["step"], step);
  // One version of kforge-micro-grpo per checkpoint (every 2 steps), each a child of the SFT version.
  json final_model = body_of(server.get("/v1/models/" + std::to_string(done["model_id"].get<int64_t>())));
  EXPECT_EQ(final_model["model"], "kforge-micro-grpo@" + std::to_string(total_steps / 2));
  EXPECT_EQ(final_model["parent_id"], sft["model_id"]);
}

// Cancel a running SFT job: it stops between steps and is recorded as cancelled.
TEST(TrainingJobs, CancelStopsBetweenSteps) {
  KFORGE_REQUIRE_DB();
  kforge::test::ApiServer server;
  DataDir data;
  json request = {{"method", "sft"},
                  {"dataset", write_pairs(data, 16, 2)},
                  {"output_model", "kforge-micro"},
                  {"hyperparameters", {{"max_steps", 100000}, {"batch_size", 2}, {"vocab_size", 300}, {"eval_every", 0},
                                       {"checkpoint_every", 0}}}};
  auto created = server.post("/v1/training-jobs", request.dump(), server.submit);
  ASSERT_EQ(created.status, 202) << created.body;
  int64_t job_id = body_of(created)["id"];
  auto worker = start_worker(server.database.url(), data, "training-cancel-worker");
  auto deadline = std::chrono::steady_clock::now() + 120s;
  while (std::chrono::steady_clock::now() < deadline && max_metric_step(server.database.url(), job_id) < 2) {
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_GE(max_metric_step(server.database.url(), job_id), 2);
  auto cancel_sent = std::chrono::steady_clock::now();
  EXPECT_EQ(server.post("/v1/training-jobs/" + std::to_string(job_id) + "/cancel", "", server.submit).status, 202)
      << "a running job is asked to stop";
  json done = wait_finished(server, "/v1/training-jobs/" + std::to_string(job_id), 60s);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - cancel_sent).count();
  worker.signal(SIGTERM);
  worker.wait_for(30s);
  EXPECT_EQ(done.value("status", ""), "cancelled") << done.dump(2);
  EXPECT_LT(seconds, 10.0);
  EXPECT_LT(max_metric_step(server.database.url(), job_id), 100000);
}

// Payloads the worker cannot run fail at once (no retry) with the field named.
TEST(TrainingJobs, BadPayloadsFailNamingTheField) {
  KFORGE_REQUIRE_DB();
  kforge::test::ApiServer server;
  DataDir data;
  // A registered version without weights (no config.json), for GRPO and evaluation.
  fs::path empty_model = data.path / "empty-model";
  fs::create_directories(empty_model);
  std::ofstream(empty_model / "README") << "no weights here\n";
  auto registered = server.post("/v1/models", json{{"name", "hollow"}, {"path", empty_model.string()}}.dump(), server.admin);
  ASSERT_EQ(registered.status, 201) << registered.body;

  struct Case {
    std::string path;      // API resource, or "" to insert the job directly
    std::string kind;      // for direct inserts
    json body;
    std::string expected;  // substring of the error
  };
  std::vector<Case> cases = {
      {"/v1/training-jobs", "", {{"method", "sft"}, {"dataset", "/nonexistent/pairs.jsonl"}}, "dataset: no file '/nonexistent/pairs.jsonl'"},
      {"/v1/training-jobs", "", {{"method", "sft"}, {"suite", "kernelbench"}}, "suite: unknown suite 'kernelbench'"},
      {"/v1/training-jobs", "", {{"method", "grpo"}, {"suite", "builtin"}, {"base_model", "hollow"}}, "base_model: model hollow@1 has no weights"},
      {"/v1/evaluations", "", {{"model", "hollow"}, {"suite", "heldout"}}, "model: model hollow@1 has no weights"},
      {"/v1/evaluations", "", {{"model", "hollow"}, {"suite", "heldout"}, {"target", "cuda"}}, "target: 'cuda' is not supported"},
      {"", "train_sft", {{"suite", "builtin"}, {"hyperparameters", {{"batch_size", "big"}}}}, "hyperparameters.batch_size: must be an integer"},
      {"", "train_grpo", {{"suite", "builtin"}, {"base_model_id", 999999}}, "base_model: model id 999999 does not exist"},
      {"", "evaluate", {{"model_id", 999999}, {"suite", "heldout"}}, "model: model id 999999 does not exist"},
      {"", "evaluate", {{"model_id", 1}, {"suite", "heldout"}, {"settings", {{"samples", 0}}}}, "settings.samples: must be in 1..256"},
  };
  // Bad SFT dataset lines are named with the file and line.
  fs::path bad_jsonl = data.path / "bad.jsonl";
  std::ofstream(bad_jsonl) << R"({"prompt": "a", "completion": "b"})" << "\n" << R"({"prompt": 3})" << "\n";
  cases.push_back({"/v1/training-jobs", "", {{"method", "sft"}, {"dataset", bad_jsonl.string()}}, "dataset: "});
  // A data file posing a held-out op (add_bcast_3d: its inputs and source, renamed) is refused.
  fs::path leaky_jsonl = data.path / "leaky.jsonl";
  std::ofstream(leaky_jsonl) << json{{"prompt", "### op plus\n### target opencl\n### inputs\nx: float32[32, 512, 512]\ny: float32[32, 1, 512]\n"
                                                "### source\ndef forward(x: Tensor, y: Tensor) -> Tensor:\n    return x + y\n"
                                                "### kernel\n"},
                                     {"completion", "k"}}.dump()
                                << "\n";
  cases.push_back({"/v1/training-jobs", "", {{"method", "sft"}, {"dataset", leaky_jsonl.string()}},
                   "dataset: holds 1 held-out op(s), first add_bcast_3d"});

  std::vector<int64_t> job_ids;
  for (const auto& c : cases) {
    if (!c.path.empty()) {
      auto resp = server.post(c.path, c.body.dump(), server.submit);
      ASSERT_EQ(resp.status, 202) << c.body.dump() << " -> " << resp.body;
      job_ids.push_back(body_of(resp)["id"].get<int64_t>());
    } else {
      auto conn = kforge::db::connect(server.database.url());
      kforge::db::JobInsert insert;
      insert.kind = c.kind;
      insert.max_attempts = 3;
      insert.args_json = c.body.dump();
      job_ids.push_back(kforge::db::job_insert(*conn, insert).job.id);
    }
  }
  auto worker = start_worker(server.database.url(), data, "training-bad-worker");
  auto conn = kforge::db::connect(server.database.url());
  auto deadline = std::chrono::steady_clock::now() + 180s;
  std::vector<kforge::db::Job> jobs;
  while (std::chrono::steady_clock::now() < deadline) {
    jobs.clear();
    bool all_done = true;
    for (int64_t id : job_ids) {
      auto job = kforge::db::job_get(*conn, id);
      jobs.push_back(*job);
      all_done = all_done && job->finished_at != "";
    }
    if (all_done) break;
    std::this_thread::sleep_for(200ms);
  }
  worker.signal(SIGTERM);
  worker.wait_for(30s);
  for (size_t case_idx = 0; case_idx < cases.size(); ++case_idx) {
    const auto& job = jobs[case_idx];
    SCOPED_TRACE(cases[case_idx].body.dump());
    EXPECT_EQ(job.state, kforge::db::JobState::failed) << job.errors_json;
    EXPECT_EQ(job.attempt, 1) << "a bad payload is not retried";
    EXPECT_NE(job.errors_json.find(cases[case_idx].expected), std::string::npos)
        << "expected '" << cases[case_idx].expected << "' in " << job.errors_json;
  }
}

// A worker on "another host" (KFORGE_MODEL_FILES=fetch: it never reads the row's
// directory, and its data directory starts empty) samples from a version trained by
// another worker: the files come from GET /v1/models/{id}/files/{name}, sha256-checked,
// into its cache; a second generation finds them there (the server's copy is gone by
// then, so a fetch would fail); a file changed on the server after registration is
// refused, naming the file and both digests, and not kept.
TEST(TrainingJobs, RemoteWorkerFetchesModelFilesIntoItsSha256Cache) {
  KFORGE_REQUIRE_DB();
  if (kforge::harness::list_devices().empty()) GTEST_SKIP() << "no OpenCL device (install pocl-opencl-icd)";
  kforge::test::ApiServer server;
  DataDir trainer_data;
  DataDir remote_data;
  json sft_request = {{"method", "sft"},
                      {"dataset", write_pairs(trainer_data, 8, 1)},
                      {"output_model", "kforge-micro"},
                      {"hyperparameters",
                       {{"max_steps", 2}, {"batch_size", 4}, {"micro_batch", 4}, {"checkpoint_every", 0},
                        {"eval_every", 0}, {"warmup_steps", 0}, {"vocab_size", 300}}}};
  {
    auto trainer = start_worker(server.database.url(), trainer_data, "model-files-trainer");
    auto created = server.post("/v1/training-jobs", sft_request.dump(), server.submit);
    ASSERT_EQ(created.status, 202) << created.body;
    json sft = wait_finished(server, "/v1/training-jobs/" + std::to_string(body_of(created)["id"].get<int64_t>()), 300s);
    trainer.signal(SIGTERM);
    trainer.wait_for(30s);
    ASSERT_EQ(sft.value("status", ""), "succeeded") << sft.dump(2);
  }
  json model = collect(server, "/v1/models").at(0);
  const size_t file_count = model["files"].size();
  ASSERT_GE(file_count, 3u) << model.dump(2) << ": config, weights, tokenizer";

  fs::path cache = remote_data.path / "model-cache";
  ASSERT_FALSE(fs::exists(cache));
  auto remote = start_worker(server.database.url(), remote_data, "model-files-remote", {},
                             {"KFORGE_MODEL_FILES=fetch", "KFORGE_SERVER_URL=http://127.0.0.1:" + std::to_string(server.port),
                              "KFORGE_TOKEN=" + server.submit});
  json op = json::parse(std::ifstream(kforge::test::source_path("suite/level1/abs.json")));
  for (const char* suite_field : {"split", "level", "category"}) op.erase(suite_field);
  auto generate = [&](const std::string& model_name) {
    json request = {{"op", op}, {"samples", 1}, {"model", model_name}, {"time_budget_s", 120}};
    auto created = server.post("/v1/generations", request.dump(), server.submit);
    EXPECT_EQ(created.status, 202) << created.body;
    return wait_finished(server, "/v1/generations/" + std::to_string(body_of(created)["id"].get<int64_t>()), 300s);
  };

  json first = generate("kforge-micro");
  ASSERT_EQ(first.value("status", ""), "succeeded") << first.dump(2);
  EXPECT_EQ(first["result"]["generator"], "policy") << first.dump(2);
  EXPECT_EQ(first["result"]["model_files"]["source"], "server") << first.dump(2);
  EXPECT_EQ(first["result"]["model_files"]["fetched"], file_count);
  // Every blob is named by the digest of its content, which is the row's.
  std::set<std::string> recorded, cached;
  for (const auto& file : model["files"]) recorded.insert(file["sha256"].get<std::string>());
  for (const auto& entry : fs::directory_iterator(cache / "sha256")) {
    cached.insert(entry.path().filename().string());
    EXPECT_EQ(kforge::file_sha256_hex(entry.path().string()).value_or(""), entry.path().filename().string());
  }
  EXPECT_EQ(cached, recorded);

  // The server's copy is gone: only the cache can serve the second generation.
  auto row = kforge::db::model_get(*kforge::db::connect(server.database.url()), model["id"].get<int64_t>());
  ASSERT_TRUE(row && !row->path.empty());
  fs::remove_all(row->path);
  json second = generate("kforge-micro");
  ASSERT_EQ(second.value("status", ""), "succeeded") << second.dump(2);
  EXPECT_EQ(second["result"]["generator"], "policy");
  EXPECT_EQ(second["result"]["model_files"]["source"], "cache") << second.dump(2);
  EXPECT_EQ(second["result"]["model_files"]["fetched"], 0);

  // A version whose config.json changed on the server after it was registered.
  fs::path tampered = trainer_data.path / "tampered";
  fs::create_directories(tampered);
  for (const auto& entry : fs::directory_iterator(cache / "models" / std::to_string(model["id"].get<int64_t>()))) {
    fs::copy_file(entry.path(), tampered / entry.path().filename());
    fs::permissions(tampered / entry.path().filename(), fs::perms::owner_write, fs::perm_options::add);  // blobs are 0444
  }
  // Trailing whitespace (still valid JSON) gives config.json a digest the cache lacks.
  std::ofstream(tampered / "config.json", std::ios::app) << "\n";
  auto registered = server.post("/v1/models", json{{"name", "kforge-tampered"}, {"path", tampered.string()}}.dump(), server.admin);
  ASSERT_EQ(registered.status, 201) << registered.body;
  std::string recorded_digest;
  for (const auto& file : body_of(registered)["files"]) {
    if (file["name"] == "config.json") recorded_digest = file["sha256"];
  }
  std::ofstream(tampered / "config.json", std::ios::app) << " ";
  std::string served_digest = kforge::file_sha256_hex((tampered / "config.json").string()).value();
  json third = generate("kforge-tampered");
  remote.signal(SIGTERM);
  remote.wait_for(30s);
  ASSERT_EQ(third.value("status", ""), "failed") << third.dump(2);
  EXPECT_EQ(third["attempt"], 1) << "a digest mismatch is not retried";
  std::string error = third.dump();
  EXPECT_NE(error.find("file 'config.json': sha256 mismatch"), std::string::npos) << error;
  EXPECT_NE(error.find(recorded_digest), std::string::npos) << error;
  EXPECT_NE(error.find(served_digest), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(cache / "sha256" / served_digest)) << "the bad download is not kept";
  for (const auto& entry : fs::directory_iterator(cache / "tmp")) {
    EXPECT_EQ(entry.path().filename().string().find(".part"), std::string::npos) << entry.path();
  }
}
