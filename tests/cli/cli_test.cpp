// The real `kforge` CLI binary against the real server: op submit, generate
// (queued, and --wait while a stand-in worker completes the job), jobs list,
// train, leaderboard (eager named the winner where it is faster), eval start / show /
// compare (hand-worked per-op deltas, GET /v1/evaluations/{id}/compare), demo (suite ops
// queued at once, each result printed as it lands), and clear errors for a missing
// token or bad input.
// Run: scripts/test.sh build -R cli_test
#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "db/connection.h"
#include "db/models.h"
#include "db/ops.h"
#include "db/queue.h"
#include "db/workers.h"
#include "tests/server/api_fixture.h"
#include "tests/support/processes.h"

using kforge::test::ApiServer;
using nlohmann::json;

namespace {

std::pair<int, std::string> kforge_cli(const ApiServer& server, const std::string& token,
                                       const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"env", "KFORGE_URL=http://127.0.0.1:" + std::to_string(server.port),
                                   "KFORGE_TOKEN=" + token, kforge::test::bin_path("kforge")};
  argv.insert(argv.end(), args.begin(), args.end());
  return kforge::run_command(argv);
}

std::string write_op_file(const std::string& name) {
  std::string path = "/tmp/kforge-cli-op-" + std::to_string(getpid()) + "-" + name + ".json";
  std::ofstream(path) << kforge::test::sample_op(name);
  return path;
}

}  // namespace

TEST(Cli, SubmitGenerateTrainListAndLeaderboard) {
  KFORGE_REQUIRE_DB();
  ApiServer server;
  std::string op_file = write_op_file("silu_mul");

  auto [no_token_code, no_token_out] = kforge_cli(server, "", {"op", "submit", op_file});
  EXPECT_EQ(no_token_code, 1);
  EXPECT_NE(no_token_out.find("401"), std::string::npos) << no_token_out;

  auto [submit_code, submit_out] = kforge_cli(server, server.submit, {"op", "submit", op_file});
  ASSERT_EQ(submit_code, 0) << submit_out;
  EXPECT_NE(submit_out.find("created op 1 silu_mul"), std::string::npos) << submit_out;
  EXPECT_NE(submit_out.find("output [64,32] float32"), std::string::npos) << submit_out;

  auto [queued_code, queued_out] = kforge_cli(server, server.submit, {"generate", "--op", op_file, "--samples", "2"});
  ASSERT_EQ(queued_code, 0) << queued_out;
  EXPECT_NE(queued_out.find("queued generation"), std::string::npos) << queued_out;

  // Cancel job 1 (queued above) so the stand-in worker's first claim is job 2.
  ASSERT_EQ(server.post("/v1/generations/1/cancel", "", server.submit).status, 200);
  // A stand-in worker: claims the next generation, records a correct kernel, completes it.
  std::thread worker([&] {
    auto conn = kforge::db::connect(server.database.url());
    int64_t worker_id = kforge::db::worker_register(*conn, {"cli-test", 1, "pocl", "0.1.0", 1});
    for (int attempt = 0; attempt < 200; ++attempt) {
      kforge::db::ClaimRequest claim;
      claim.worker_id = worker_id;
    claim.capabilities = {"target:opencl", "device:cpu"};  // what a CPU worker offers
      auto jobs = kforge::db::job_claim(*conn, claim);
      if (!jobs.empty() && jobs[0].id == 2) {
        kforge::db::CandidateRecord c;
        c.job_id = jobs[0].id;
        c.op_id = 1;
        c.device = "pthread-haswell-AMD EPYC 7B13 (PoCL)";  // longer than any fixed column
        c.source = "__kernel void silu_mul(__global const float* x) {}";
        c.outcome = "correct";
        c.kernel_ms = 0.5;
        c.baseline_ms = 1.0;
        c.speedup = 2.0;
        kforge::db::candidate_insert(*conn, c);
        // The result's message (the worker's note when eager wins or every kernel is flagged) is printed first.
        kforge::db::job_complete(*conn, kforge::db::job_lease(jobs[0]),
                                 R"({"best_speedup": 2.0, "message": "a note from the worker"})");
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  auto [wait_code, wait_out] =
      kforge_cli(server, server.submit, {"generate", "--op-id", "1", "--wait", "--poll-s", "0.2", "--timeout-s", "60"});
  worker.join();
  EXPECT_EQ(wait_code, 0) << wait_out;
  EXPECT_NE(wait_out.find("candidates"), std::string::npos) << "progress bar: " << wait_out;
  EXPECT_NE(wait_out.find("speedup 2.00x"), std::string::npos) << wait_out;
  EXPECT_LT(wait_out.find("a note from the worker\nbest kernel:"), wait_out.find("speedup 2.00x")) << wait_out;
  EXPECT_NE(wait_out.find("__kernel void silu_mul"), std::string::npos) << wait_out;

  auto [train_code, train_out] =
      kforge_cli(server, server.submit, {"train", "sft", "--suite", "builtin", "epochs=2", "learning_rate=0.001"});
  ASSERT_EQ(train_code, 0) << train_out;
  EXPECT_NE(train_out.find("\"epochs\":2"), std::string::npos) << train_out;
  auto [bad_train_code, bad_train_out] = kforge_cli(server, server.submit, {"train", "sft", "--suite", "b", "lr=1"});
  EXPECT_EQ(bad_train_code, 1);
  EXPECT_NE(bad_train_out.find("hyperparameters.lr: is not a known field"), std::string::npos) << bad_train_out;

  auto [jobs_code, jobs_out] = kforge_cli(server, "", {"jobs", "list"});
  ASSERT_EQ(jobs_code, 0) << jobs_out;
  EXPECT_NE(jobs_out.find("train_sft"), std::string::npos) << jobs_out;
  EXPECT_NE(jobs_out.find("succeeded"), std::string::npos) << jobs_out;
  EXPECT_NE(jobs_out.find("cancelled"), std::string::npos) << jobs_out;

  auto [board_code, board_out] = kforge_cli(server, "", {"leaderboard"});
  ASSERT_EQ(board_code, 0) << board_out;
  EXPECT_NE(board_out.find("silu_mul"), std::string::npos) << board_out;
  EXPECT_NE(board_out.find("2.00x"), std::string::npos) << board_out;
  // Columns are sized from the data: the speedup starts right under its header.
  size_t header_end = board_out.find('\n');
  size_t speedup_col = board_out.find("SPEEDUP");
  ASSERT_LT(speedup_col, header_end) << board_out;
  size_t row_start = header_end + 1;
  ASSERT_LT(row_start + speedup_col, board_out.size()) << board_out;
  EXPECT_EQ(board_out.substr(row_start + speedup_col, 5), "2.00x") << board_out;

  auto [usage_code, usage_out] = kforge_cli(server, "", {"frobnicate"});
  EXPECT_EQ(usage_code, 2);
  EXPECT_NE(usage_out.find("unknown command"), std::string::npos);
  auto [missing_code, missing_out] = kforge_cli(server, server.submit, {"op", "submit", "/nonexistent.json"});
  EXPECT_EQ(missing_code, 1);
  EXPECT_NE(missing_out.find("cannot read /nonexistent.json"), std::string::npos);
  std::remove(op_file.c_str());
}

// Two evaluations stored as an evaluate job would store them, with hand-worked
// numbers: per-op pass@1 of the baseline 0, 0.5, 0.25, 1 (and an op only it has),
// of the other 0.5, 0.5, 1, 1, so the deltas are +0.5, 0, +0.75, 0 (mean +0.3125).
TEST(Cli, EvalStartShowAndCompare) {
  KFORGE_REQUIRE_DB();
  ApiServer server;
  auto conn = kforge::db::connect(server.database.url());
  for (int version : {1, 2}) {
    kforge::db::ModelRecord model;
    model.name = "evalme";
    model.version = version;
    model.path = "/nonexistent/evalme";
    kforge::db::model_insert(*conn, model);
  }
  auto [start_code, start_out] =
      kforge_cli(server, server.submit, {"eval", "start", "evalme@1", "heldout", "samples=4", "limit_ops=5"});
  ASSERT_EQ(start_code, 0) << start_out;
  EXPECT_NE(start_out.find("queued evaluation 1 of evalme@1"), std::string::npos) << start_out;
  auto [bad_code, bad_out] = kforge_cli(server, server.submit, {"eval", "start", "evalme@1", "heldout", "samples=0"});
  EXPECT_EQ(bad_code, 1);
  EXPECT_NE(bad_out.find("settings.samples"), std::string::npos) << bad_out;
  auto [second_code, second_out] = kforge_cli(server, server.submit, {"eval", "start", "evalme@2", "heldout"});
  ASSERT_EQ(second_code, 0) << second_out;

  // Not finished yet: nothing to compare.
  auto early = server.get("/v1/evaluations/2/compare?baseline=1");
  EXPECT_EQ(early.status, 409) << early.body;
  EXPECT_NE(early.body.find("only finished evaluations"), std::string::npos) << early.body;

  auto task = [](const std::string& op, double pass1, double fast1, double violations) {
    return json{{"op", op}, {"samples", 4}, {"correct", static_cast<int>(pass1 * 4)}, {"pass_at_1", pass1},
                {"pass_at_k", pass1 > 0 ? 1.0 : 0.0}, {"best_speedup", fast1 > 0 ? 1.5 : 0.0}, {"compile_rate", 1.0},
                {"rule_violation_rate", violations}, {"fast_p", {{"0", pass1}, {"1", fast1}, {"1.5", 0.0}, {"2", 0.0}}},
                {"fast_p_vs_compile", nullptr}};
  };
  json baseline_tasks = {task("relu", 0, 0, 0.5), task("gelu", 0.5, 0.25, 0), task("softmax", 0.25, 0, 0.25),
                         task("add", 1, 1, 0), task("only_before", 1, 1, 0)};
  json other_tasks = {task("add", 1, 1, 0), task("relu", 0.5, 0.5, 0), task("gelu", 0.5, 0.25, 0),
                      task("softmax", 1, 0.25, 0)};
  auto store = [&](int64_t job_id, const json& tasks, double pass1) {
    kforge::db::EvaluationRecord record;
    record.job_id = job_id;
    record.model_id = job_id;  // models 1 and 2 in the same order
    record.suite = "heldout";
    record.device = "pocl-cpu";
    record.metrics_json = json{{"ops", tasks.size()}, {"samples_per_op", 4}, {"k", 4}, {"pass_at_1", pass1},
                               {"fast_0", pass1}, {"intervals", {{"pass_at_1", {0.1, 0.9}}}}, {"timed", true},
                               {"fast_1_vs_compile", nullptr}}.dump();
    record.tasks_json = tasks.dump();
    kforge::db::evaluation_insert(*conn, record);
    kforge::db::job_cancel(*conn, job_id);  // a finished evaluation (status is not compared)
  };
  store(1, baseline_tasks, 0.55);
  store(2, other_tasks, 0.75);

  auto [show_code, show_out] = kforge_cli(server, "", {"eval", "show", "1"});
  ASSERT_EQ(show_code, 0) << show_out;
  EXPECT_NE(show_out.find("evalme@1"), std::string::npos) << show_out;
  EXPECT_NE(show_out.find("55.0% [10.0, 90.0]"), std::string::npos) << "pass@1 with its interval: " << show_out;
  EXPECT_NE(show_out.find("not measured on this device"), std::string::npos) << show_out;
  EXPECT_NE(show_out.find("softmax"), std::string::npos) << "the per-op table: " << show_out;

  auto compared = server.get("/v1/evaluations/2/compare?baseline=1");
  ASSERT_EQ(compared.status, 200) << compared.body;
  json cmp = json::parse(compared.body);
  EXPECT_EQ(cmp["ops_compared"], 4);
  EXPECT_EQ(cmp["only_in_baseline"], json::array({"only_before"}));
  EXPECT_TRUE(cmp["only_in_evaluation"].empty());
  EXPECT_TRUE(cmp["same_suite"].get<bool>());
  EXPECT_EQ(cmp["baseline"]["model"], "evalme@1");
  const json& pass1 = cmp["metrics"]["pass_at_1"];
  EXPECT_EQ(pass1["ops"], 4);
  EXPECT_DOUBLE_EQ(pass1["baseline"]["value"].get<double>(), (0 + 0.5 + 0.25 + 1) / 4);
  EXPECT_DOUBLE_EQ(pass1["evaluation"]["value"].get<double>(), (0.5 + 0.5 + 1 + 1) / 4);
  EXPECT_DOUBLE_EQ(pass1["difference"]["value"].get<double>(), 0.3125);
  // Deltas {0.5, 0, 0.75, 0}: every paired replicate's mean lies in [0, 0.75], and a
  // replicate drawing only the two zero-delta ops has probability (2/4)^4 = 6.25% > 2.5%,
  // so the interval's low end is exactly 0: the difference is not shown to be real.
  EXPECT_DOUBLE_EQ(pass1["difference"]["ci"][0].get<double>(), 0.0);
  EXPECT_LE(pass1["difference"]["ci"][1].get<double>(), 0.75);
  EXPECT_FALSE(pass1["difference_excludes_zero"].get<bool>());
  EXPECT_TRUE(pass1["intervals_overlap"].get<bool>());
  EXPECT_TRUE(cmp["metrics"].contains("fast_1"));
  EXPECT_DOUBLE_EQ(cmp["metrics"]["fast_1"]["difference"]["value"].get<double>(), (0.5 + 0 + 0.25 + 0) / 4);
  EXPECT_FALSE(cmp["metrics"].contains("fast_1_vs_compile")) << "neither evaluation timed torch.compile";
  EXPECT_DOUBLE_EQ(cmp["metrics"]["rule_violation_rate"]["difference"]["value"].get<double>(), -0.75 / 4);
  ASSERT_EQ(cmp["per_op"].size(), 4u);
  EXPECT_EQ(cmp["per_op"][0]["op"], "relu") << "the baseline's order";
  EXPECT_DOUBLE_EQ(cmp["per_op"][0]["pass_at_1"]["delta"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(cmp["per_op"][2]["pass_at_1"]["delta"].get<double>(), 0.75);
  EXPECT_EQ(server.get("/v1/evaluations/2/compare?baseline=1").body, compared.body) << "seeded: reproducible";

  auto [cmp_code, cmp_out] = kforge_cli(server, "", {"eval", "compare", "1", "2"});
  ASSERT_EQ(cmp_code, 0) << cmp_out;
  EXPECT_NE(cmp_out.find("4 ops in common"), std::string::npos) << cmp_out;
  EXPECT_NE(cmp_out.find("+31.2 pts [0.0,"), std::string::npos) << cmp_out;
  EXPECT_NE(cmp_out.find("difference includes 0; intervals overlap"), std::string::npos) << cmp_out;
  EXPECT_NE(cmp_out.find("only in the baseline: [\"only_before\"]"), std::string::npos) << cmp_out;
  EXPECT_NE(cmp_out.find("softmax"), std::string::npos) << cmp_out;
  auto [cmp_json_code, cmp_json_out] = kforge_cli(server, "", {"eval", "compare", "1", "2", "--json"});
  ASSERT_EQ(cmp_json_code, 0) << cmp_json_out;
  EXPECT_EQ(json::parse(cmp_json_out), cmp) << "--json prints the server's comparison as it is";

  EXPECT_EQ(server.get("/v1/evaluations/2/compare").status, 400);
  EXPECT_EQ(server.get("/v1/evaluations/2/compare?baseline=x").status, 400);
  EXPECT_EQ(server.get("/v1/evaluations/2/compare?baseline=99").status, 404);
  EXPECT_EQ(server.get("/v1/evaluations/99/compare?baseline=1").status, 404);
  auto [usage_code, usage_out] = kforge_cli(server, "", {"eval", "compare", "1"});
  EXPECT_EQ(usage_code, 2);
  EXPECT_NE(usage_out.find("kforge eval compare BASELINE_ID ID"), std::string::npos) << usage_out;

  // Unknown and malformed ids: the server's 404 detail, or a usage error before any request.
  auto [short_code, short_out] = kforge_cli(server, "", {"eval", "2"});
  EXPECT_EQ(short_code, 0) << short_out;
  EXPECT_NE(short_out.find("evalme@2"), std::string::npos) << "`kforge eval ID` shows it: " << short_out;
  auto [missing_code, missing_out] = kforge_cli(server, "", {"eval", "show", "99"});
  EXPECT_EQ(missing_code, 1);
  EXPECT_NE(missing_out.find("404 Not Found: no evaluation 99"), std::string::npos) << missing_out;
  auto [missing_base_code, missing_base_out] = kforge_cli(server, "", {"eval", "compare", "99", "2"});
  EXPECT_EQ(missing_base_code, 1);
  EXPECT_NE(missing_base_out.find("no evaluation 99 (the baseline)"), std::string::npos) << missing_base_out;
  auto [missing_other_code, missing_other_out] = kforge_cli(server, "", {"eval", "compare", "1", "98"});
  EXPECT_EQ(missing_other_code, 1);
  EXPECT_NE(missing_other_out.find("no evaluation 98"), std::string::npos) << missing_other_out;
  auto [bad_id_code, bad_id_out] = kforge_cli(server, "", {"eval", "compare", "1", "two"});
  EXPECT_EQ(bad_id_code, 2);
  EXPECT_NE(bad_id_out.find("an evaluation id is a positive number"), std::string::npos) << bad_id_out;
  EXPECT_NE(bad_id_out.find("got 'two'"), std::string::npos) << bad_id_out;
}

// The ops leaderboard ranks PyTorch eager above a kernel that is slower than it.
TEST(Cli, LeaderboardNamesEagerWhenItWins) {
  KFORGE_REQUIRE_DB();
  ApiServer server;
  std::string op_file = write_op_file("silu_mul");
  ASSERT_EQ(kforge_cli(server, server.submit, {"op", "submit", op_file}).first, 0);
  ASSERT_EQ(kforge_cli(server, server.submit, {"generate", "--op-id", "1", "--samples", "1"}).first, 0);
  auto conn = kforge::db::connect(server.database.url());
  kforge::db::CandidateRecord c;
  c.job_id = 1;
  c.op_id = 1;
  c.device = "slow-cpu";
  c.source = "__kernel void silu_mul(__global const float* x) {}";
  c.outcome = "correct";
  c.kernel_ms = 5.0;
  c.baseline_ms = 1.0;
  c.speedup = 0.2;
  kforge::db::candidate_insert(*conn, c);
  json row = json::parse(server.get("/v1/leaderboard/ops").body)["data"][0];
  EXPECT_EQ(row["winner"], "pytorch_eager");
  EXPECT_TRUE(row["eager_wins"].get<bool>());
  EXPECT_NE(row["verdict"].get<std::string>().find("PyTorch eager is faster than every verified kernel (the best runs at 0.20x"),
            std::string::npos) << row.dump();
  ASSERT_EQ(row["ranking"].size(), 2u) << "no torch.compile time on a CPU";
  EXPECT_EQ(row["ranking"][0]["entry"], "pytorch_eager");
  EXPECT_EQ(row["ranking"][0]["rank"], 1);
  EXPECT_EQ(row["ranking"][1]["entry"], "kernel");
  EXPECT_DOUBLE_EQ(row["ranking"][1]["speedup_vs_eager"].get<double>(), 0.2);
  auto [board_code, board_out] = kforge_cli(server, "", {"leaderboard"});
  ASSERT_EQ(board_code, 0) << board_out;
  EXPECT_NE(board_out.find("0.20x    PyTorch eager (use eager)"), std::string::npos) << "the row says eager wins: " << board_out;
  std::remove(op_file.c_str());
}

// `kforge demo` posts the default suite ops (level 1 and 2) and prints each result when its
// generation finishes: the stand-in worker finishes them last-posted first, a second apart,
// and leaves the first without a correct kernel, so order and the failure line are both seen.
TEST(Cli, DemoQueuesSuiteOpsAndPrintsEachAsItCompletes) {
  KFORGE_REQUIRE_DB();
  ApiServer server;
  std::thread worker([&] {
    auto conn = kforge::db::connect(server.database.url());
    int64_t worker_id = kforge::db::worker_register(*conn, {"cli-demo-test", 1, "pocl", "0.1.0", 1});
    std::vector<kforge::db::Job> claimed;
    for (int attempt = 0; attempt < 300 && claimed.size() < 4; ++attempt) {
      kforge::db::ClaimRequest claim;
      claim.worker_id = worker_id;
      claim.capabilities = {"target:opencl", "device:cpu"};
      for (auto& job : kforge::db::job_claim(*conn, claim)) claimed.push_back(job);
      if (claimed.size() < 4) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    for (auto it = claimed.rbegin(); it != claimed.rend(); ++it) {
      int64_t op_id = json::parse(it->args_json)["op_id"];
      bool first_posted = it == claimed.rend() - 1;
      kforge::db::CandidateRecord c;
      c.job_id = it->id;
      c.op_id = op_id;
      c.device = "cpu (PoCL)";
      c.source = "__kernel void demo_" + std::to_string(it->id) + "(__global float* out) {}";
      c.outcome = first_posted ? "wrong_output" : "correct";
      if (!first_posted) {
        double baseline_ms = 1.0 + static_cast<double>(it->id);
        c.kernel_ms = 0.5;
        c.baseline_ms = baseline_ms;
        c.speedup = baseline_ms / 0.5;
      }
      kforge::db::candidate_insert(*conn, c);
      kforge::db::job_complete(*conn, kforge::db::job_lease(*it), "{}");
      std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    }
  });
  auto [code, out] = kforge_cli(server, server.submit,
                                {"demo", "--suite-dir", std::string(KFORGE_SOURCE_DIR) + "/suite", "--samples", "2",
                                 "--poll-s", "0.2", "--timeout-s", "60"});
  worker.join();
  EXPECT_EQ(code, 1) << "one op has no verified kernel: " << out;
  EXPECT_NE(out.find("queued 4 demo generations (level1/relu,level1/softmax_last,level2/silu_mul,level2/gelu_add)"),
            std::string::npos)
      << out;
  // Printed as they completed: last posted first.
  size_t gelu_add = out.find("level2/gelu_add"), silu_mul = out.find("level2/silu_mul ");
  size_t softmax = out.find("level1/softmax_last "), relu = out.find("level1/relu ");
  ASSERT_NE(relu, std::string::npos) << out;
  EXPECT_LT(out.find("level2/gelu_add", gelu_add + 1), silu_mul) << out;
  EXPECT_LT(silu_mul, softmax) << out;
  EXPECT_LT(softmax, relu) << out;
  EXPECT_NE(out.find("generation 4 succeeded"), std::string::npos) << out;
  EXPECT_NE(out.find("verified kernel, candidate 1, speedup 10.00x (0.5000 ms vs PyTorch 5.0000 ms)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("    __kernel void demo_4"), std::string::npos) << "the kernel's head: " << out;
  EXPECT_NE(out.find("no verified kernel"), std::string::npos) << out;
  EXPECT_NE(out.find("3/4 ops have a verified kernel"), std::string::npos) << out;

  auto [board_code, board_out] = kforge_cli(server, "", {"leaderboard"});
  ASSERT_EQ(board_code, 0) << board_out;
  EXPECT_NE(board_out.find("gelu_add"), std::string::npos) << board_out;
  EXPECT_NE(board_out.find("10.00x"), std::string::npos) << board_out;

  auto [missing_code, missing_out] =
      kforge_cli(server, server.submit, {"demo", "--suite-dir", "/nonexistent", "--demo-ops", "level1/relu"});
  EXPECT_EQ(missing_code, 1);
  EXPECT_NE(missing_out.find("cannot read /nonexistent/level1/relu.json"), std::string::npos) << missing_out;
}

TEST(Cli, UnreachableServerIsAClearError) {
  auto [code, out] = kforge::run_command({"env", "KFORGE_URL=http://127.0.0.1:1", kforge::test::bin_path("kforge"),
                                          "health"});
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("cannot reach kforge at http://127.0.0.1:1"), std::string::npos) << out;
}
