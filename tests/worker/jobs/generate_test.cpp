// The product's core path end to end, with every part real: POST /v1/generations
// to the kforge-server binary, a kforge-worker claims the job, checks candidate
// kernels on PoCL in its sandbox, and GET returns the best kernel, which the ops
// leaderboard then ranks. ctest -R jobs_generate_test
#include <gtest/gtest.h>

#include <signal.h>

#include <cmath>
#include <initializer_list>

#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "db/connection.h"
#include "db/queue.h"
#include "spec/op_spec.h"
#include "tests/server/api_fixture.h"
#include "tests/support/processes.h"
#include "worker/harness/devices.h"
#include "worker/jobs/generate.h"

using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

// Polls the generation until it leaves queued/running, or the timeout passes.
json wait_finished(kforge::test::ApiServer& server, int64_t id, std::chrono::seconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  json body;
  while (std::chrono::steady_clock::now() < deadline) {
    auto resp = server.get("/v1/generations/" + std::to_string(id));
    body = json::parse(resp.body);
    std::string status = body.value("status", "");
    if (status != "queued" && status != "running" && status != "retrying") return body;
    std::this_thread::sleep_for(200ms);
  }
  return body;
}

// POSTs the generation, runs one kforge-worker until it finishes, and returns its final
// state; `id` stays 0 (and the POST's answer is returned) when the POST is refused.
json generate_with_worker(kforge::test::ApiServer& server, const json& request, const std::string& log,
                          std::chrono::seconds timeout, int64_t& id) {
  auto created = server.post("/v1/generations", request.dump(), server.submit);
  if (created.status != 202) return json{{"status", created.status}, {"body", created.body}};
  id = json::parse(created.body)["id"].get<int64_t>();
  auto worker = kforge::Subprocess::spawn({kforge::test::bin_path("kforge-worker"), "--database-url",
                                           server.database.url(), "--poll-s", "0.5"},
                                          {}, log);
  json done = wait_finished(server, id, timeout);
  worker.signal(SIGTERM);
  worker.wait_for(30s);
  return done;
}

}  // namespace

TEST(GenerateArgs, RejectsBadFieldsByName) {
  EXPECT_THROW(kforge::jobs::parse_generate_args("[]"), std::invalid_argument);
  try {
    kforge::jobs::parse_generate_args(R"({"op_id": "seven"})");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("op_id"), std::string::npos);
  }
  auto args = kforge::jobs::parse_generate_args(R"({"op_id": 7, "samples": 3, "model_id": null})");
  EXPECT_EQ(args.op_id, 7);
  EXPECT_EQ(args.samples, 3);
  EXPECT_EQ(args.model_id, 0);
}

TEST(GenerateJob, TeacherCandidatesComeInTheGenerationsTarget) {
  auto parsed = kforge::spec::parse_op_spec(kforge::test::sample_op());
  ASSERT_TRUE(parsed.ok());
  struct Case {
    const char* target;
    const char* marker;  // a line only that language's programs have
  };
  for (const Case& c : {Case{"opencl", "__kernel"}, Case{"cuda", "__global__"}, Case{"triton", "@triton.jit"}}) {
    std::string note;
    auto programs = kforge::jobs::teacher_candidates(parsed.spec, 3, &note, c.target);
    ASSERT_EQ(programs.size(), 3u) << c.target << ": " << note;
    for (const auto& program : programs) {
      EXPECT_NE(program.source.find(c.marker), std::string::npos) << c.target << "\n" << program.source;
      EXPECT_EQ(program.generator, "teacher");
    }
    EXPECT_NE(programs[0].detail, programs[1].detail) << "distinct schedules";
  }
  // No candidate at all: the note says plainly why.
  std::string note;
  EXPECT_TRUE(kforge::jobs::teacher_candidates(parsed.spec, 3, &note, "metal").empty());
  EXPECT_NE(note.find("cannot emit target 'metal'"), std::string::npos) << note;
  auto unlowered = kforge::spec::parse_op_spec(kforge::test::sample_op("logcumsumexp_op", "torch.logcumsumexp(x, 1) + y"));
  ASSERT_TRUE(unlowered.ok());
  note.clear();
  EXPECT_TRUE(kforge::jobs::teacher_candidates(unlowered.spec, 3, &note, "cuda").empty());
  EXPECT_NE(note.find("cannot lower this op: aten::logcumsumexp"), std::string::npos) << note;
}

TEST(GenerateOptions, ChildPoolCountComesFromTheEnvironment) {
  unsetenv("KFORGE_CHILD_POOL");
  EXPECT_EQ(kforge::jobs::GenerateOptions::from_env().child_pool, 2) << "two warm children per kind by default";
  setenv("KFORGE_CHILD_POOL", "0", 1);
  EXPECT_EQ(kforge::jobs::GenerateOptions::from_env().child_pool, 0) << "0: no pool, children started per op";
  setenv("KFORGE_CHILD_POOL", "3", 1);
  EXPECT_EQ(kforge::jobs::GenerateOptions::from_env().child_pool, 3);
  for (const char* bad : {"many", "-1", "2x", "65"}) {
    setenv("KFORGE_CHILD_POOL", bad, 1);
    EXPECT_THROW(kforge::jobs::GenerateOptions::from_env(), std::invalid_argument) << bad;
  }
  unsetenv("KFORGE_CHILD_POOL");
}

namespace {

// Each of `bad` in the variable `name` makes GenerateOptions::from_env throw, naming the variable.
void expect_refused(const char* name, std::initializer_list<const char*> bad) {
  for (const char* value : bad) {
    setenv(name, value, 1);
    try {
      kforge::jobs::GenerateOptions::from_env();
      ADD_FAILURE() << name << ": accepted '" << value << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
  unsetenv(name);
}

}  // namespace

TEST(GenerateOptions, PrefetchDepthComesFromTheEnvironment) {
  unsetenv("KFORGE_PREFETCH_AHEAD");
  EXPECT_EQ(kforge::jobs::GenerateOptions::from_env().prefetch_ahead, 3)
      << "a generation of 4 samples and Inductor's candidate compiles all later ones at once";
  setenv("KFORGE_PREFETCH_AHEAD", "0", 1);
  EXPECT_EQ(kforge::jobs::GenerateOptions::from_env().prefetch_ahead, 0);
  setenv("KFORGE_PREFETCH_AHEAD", "1", 1);
  EXPECT_EQ(kforge::jobs::GenerateOptions::from_env().prefetch_ahead, 1);
  expect_refused("KFORGE_PREFETCH_AHEAD", {"all", "-2", "3 ", "100"});
}

TEST(GenerateOptions, GpuTimeBudgetComesFromTheEnvironment) {
  unsetenv("KFORGE_GPU_TIME_BUDGET_S");
  EXPECT_DOUBLE_EQ(kforge::jobs::GenerateOptions::from_env().gpu_time_budget_s, 0.5);
  setenv("KFORGE_GPU_TIME_BUDGET_S", "1.5", 1);
  EXPECT_DOUBLE_EQ(kforge::jobs::GenerateOptions::from_env().gpu_time_budget_s, 1.5);
  setenv("KFORGE_GPU_TIME_BUDGET_S", "0.05", 1);
  EXPECT_DOUBLE_EQ(kforge::jobs::GenerateOptions::from_env().gpu_time_budget_s, 0.05);
  expect_refused("KFORGE_GPU_TIME_BUDGET_S", {"fast", "0", "-1", "0.5s", "11", "nan"});
}

TEST(GenerateJob, PostToLeaderboardThroughRealServerAndWorker) {
  KFORGE_REQUIRE_DB();
  if (kforge::harness::list_devices().empty()) GTEST_SKIP() << "no OpenCL device (install pocl-opencl-icd)";
  kforge::test::ApiServer server;
  json request = {{"op", json::parse(kforge::test::sample_op("silu_mul_e2e"))}, {"samples", 3}, {"time_budget_s", 300}};
  int64_t id = 0;
  json done = generate_with_worker(server, request, "/tmp/kforge-test-generate-worker.log", 240s, id);
  ASSERT_NE(id, 0) << done.dump(2);

  auto candidates = server.get("/v1/generations/" + std::to_string(id) + "/candidates");
  ASSERT_EQ(candidates.status, 200);
  ASSERT_EQ(done.value("status", ""), "succeeded") << done.dump(2);
  ASSERT_TRUE(done["best"].is_object()) << "no correct kernel; candidates: " << candidates.body;
  EXPECT_EQ(done["best"]["outcome"], "correct");
  EXPECT_GT(done["best"]["speedup"].get<double>(), 0.0);
  EXPECT_NE(done["best"]["source"].get<std::string>().find("__kernel"), std::string::npos);
  EXPECT_EQ(done["result"]["generator"], "teacher") << "no model is trained in this test";
  EXPECT_EQ(done["result"]["best_generator"], "teacher") << "the result names the generator that won";
  EXPECT_EQ(done["result"]["proposed_by_generator"]["teacher"], 3);
  // Inductor's kernels are Triton, harvested on a GPU: an opencl generation says why it has none.
  EXPECT_NE(done["result"]["inductor"].value("reason", "").find("target opencl"), std::string::npos)
      << done["result"].dump();
  // A tiny op on PoCL: eager usually wins, and the answer must then say so plainly.
  ASSERT_TRUE(done["result"]["eager_wins"].is_boolean()) << done["result"].dump();
  if (done["result"]["best_speedup"].get<double>() < 1.0) {
    EXPECT_TRUE(done["result"]["eager_wins"].get<bool>());
    EXPECT_NE(done["result"].value("message", "").find("PyTorch eager is faster"), std::string::npos)
        << done["result"].dump();
  }
  EXPECT_EQ(done["candidates"]["total"].get<int>(), done["result"]["checked"].get<int>());
  EXPECT_GE(done["candidates"]["total"].get<int>(), 1);

  EXPECT_EQ(json::parse(candidates.body)["data"].size(), done["candidates"]["total"].get<size_t>());

  // Where the generation's time went (docs/jobs.md): the serial phases add up to the worker's
  // total, every checked candidate has its row, and the checker's set-up says what it did.
  const json& phases = done["result"]["phases_ms"];
  ASSERT_TRUE(phases.is_object()) << done["result"].dump();
  const double total = phases["total"].get<double>();
  EXPECT_GT(total, 0);
  ASSERT_TRUE(phases["queue_wait"].is_number()) << "POST -> claim, from the job row: " << phases.dump();
  EXPECT_GE(phases["queue_wait"].get<double>(), 0);
  EXPECT_LT(std::abs(phases["other"].get<double>()), 0.05 * total + 200) << phases.dump();
  ASSERT_EQ(phases["candidates"].size(), done["result"]["checked"].get<size_t>());
  double candidates_ms = 0;
  for (const auto& candidate : phases["candidates"]) candidates_ms += candidate["total"].get<double>();
  EXPECT_NEAR(candidates_ms, phases["check"].get<double>(), 0.05 * phases["check"].get<double>() + 50) << phases.dump();
  EXPECT_GT(phases["setup_detail"]["total"].get<double>(), 0);
  EXPECT_GE(phases["setup_detail"]["pooled_children"].get<int>(), 1)
      << "the worker pre-started PoCL children at start (KFORGE_CHILD_POOL): " << phases.dump();

  auto board = server.get("/v1/leaderboard/ops");
  ASSERT_EQ(board.status, 200);
  EXPECT_NE(board.body.find("silu_mul_e2e"), std::string::npos) << board.body;
}

// Two CPU burners keep every core busy: the worker waits for a quiet window only as long
// as KFORGE_QUIET_WAIT_S allows (never hangs), then answers the verified kernel anyway
// with its timing marked unreliable, saying how long it waited.
TEST(GenerateJob, BusyMachineAnswersTheVerifiedKernelWithUnreliableTiming) {
  KFORGE_REQUIRE_DB();
  if (kforge::harness::list_devices().empty()) GTEST_SKIP() << "no OpenCL device (install pocl-opencl-icd)";
  kforge::test::ApiServer server;
  std::vector<kforge::Subprocess> burners;
  for (int burner = 0; burner < 2; ++burner) burners.push_back(kforge::Subprocess::spawn({"sh", "-c", "while :; do :; done"}));
  auto worker = kforge::Subprocess::spawn({kforge::test::bin_path("kforge-worker"), "--database-url",
                                           server.database.url(), "--poll-s", "0.5"},
                                          {"KFORGE_QUIET_WAIT_S=3"}, "/tmp/kforge-test-generate-busy-worker.log");
  json request = {{"op", json::parse(kforge::test::sample_op("silu_mul_e2e"))}, {"samples", 2}, {"time_budget_s", 300}};
  auto created = server.post("/v1/generations", request.dump(), server.submit);
  ASSERT_EQ(created.status, 202) << created.body;
  auto started = std::chrono::steady_clock::now();
  json done = wait_finished(server, json::parse(created.body)["id"].get<int64_t>(), 240s);
  double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  for (auto& burner : burners) {
    burner.signal(SIGKILL);
    burner.wait_for(10s);
  }
  worker.signal(SIGTERM);
  worker.wait_for(30s);

  ASSERT_EQ(done.value("status", ""), "succeeded") << done.dump(2);
  ASSERT_TRUE(done["best"].is_object()) << "the verified kernel is answered under load: " << done.dump(2);
  EXPECT_EQ(done["best"]["outcome"], "correct");
  const json& timing = done["result"]["timing"];
  RecordProperty("timing", timing.dump());  // --gtest_output=xml:FILE shows the numbers
  EXPECT_EQ(timing["timed_on"], "cpu") << "PoCL candidates are timed on the CPU, where others' load matters";
  EXPECT_DOUBLE_EQ(timing["quiet_wait_allowance_s"].get<double>(), 3.0) << timing.dump();
  EXPECT_GE(timing["quiet_wait_s"].get<double>(), 2.9) << "busy throughout: the whole allowance is spent";
  EXPECT_LT(timing["quiet_wait_s"].get<double>(), 3.5) << "and not more";
  EXPECT_EQ(timing["quiet_found"], 0) << timing.dump();
  EXPECT_EQ(timing["reliable"], false) << timing.dump();
  EXPECT_NE(timing.value("note", "").find("timing unreliable: other processes used"), std::string::npos) << timing.dump();
  EXPECT_LT(took_s, 200) << "never hangs";
}

TEST(GenerateJob, MissingOpFailsWithoutRetry) {
  KFORGE_REQUIRE_DB();
  kforge::test::TestDatabase database;
  int64_t job_id = 0;
  {
    auto conn = kforge::db::connect(database.url());
    kforge::db::JobInsert insert;
    insert.kind = "generate";
    insert.args_json = R"({"op_id": 999999, "samples": 1})";
    job_id = kforge::db::job_insert(*conn, insert).job.id;
  }
  auto worker = kforge::Subprocess::spawn(
      {kforge::test::bin_path("kforge-worker"), "--database-url", database.url(), "--poll-s", "0.5"});
  std::optional<kforge::db::Job> job;
  for (int attempt = 0; attempt < 300; ++attempt) {
    auto conn = kforge::db::connect(database.url());
    job = kforge::db::job_get(*conn, job_id);
    if (job && job->state != kforge::db::JobState::available && job->state != kforge::db::JobState::running) break;
    std::this_thread::sleep_for(100ms);
  }
  worker.signal(SIGTERM);
  worker.wait_for(30s);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->state, kforge::db::JobState::failed) << "a missing op must not be retried";
  EXPECT_EQ(job->attempt, 1);
  EXPECT_NE(job->errors_json.find("does not exist"), std::string::npos) << job->errors_json;
}

// An op the teacher cannot lower (no trained model, so the teacher is the only source):
// the generation fails, not "succeeded with no correct kernel among 0 candidates", and its
// error names the teacher's refusal.
TEST(GenerateJob, NoCandidateAtAllFailsWithTheTeachersReason) {
  KFORGE_REQUIRE_DB();
  kforge::test::ApiServer server;
  json request = {{"op", json::parse(kforge::test::sample_op("logcumsumexp_e2e", "torch.logcumsumexp(x, 1) + y"))},
                  {"samples", 2},
                  {"time_budget_s", 60}};
  int64_t id = 0;
  json done = generate_with_worker(server, request, "/tmp/kforge-test-generate-none-worker.log", 120s, id);
  ASSERT_NE(id, 0) << done.dump(2);
  ASSERT_EQ(done.value("status", ""), "failed") << done.dump(2);
  std::string message = done["error"].value("message", "");
  EXPECT_NE(message.find("no kernel could be produced"), std::string::npos) << message;
  EXPECT_NE(message.find("cannot lower this op: aten::logcumsumexp"), std::string::npos) << message;
  EXPECT_EQ(message.find("among 0"), std::string::npos) << message;
  EXPECT_EQ(done["candidates"].value("total", -1), 0) << done.dump(2);
}
