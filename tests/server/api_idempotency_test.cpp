// The Idempotency-Key race of issue 18 against the real kforge-server: rounds of 10
// parallel POST /v1/generations with one key and two different bodies. Each round must
// create exactly one job, bind the key to the body that created it, replay that job only
// to that body and refuse the other. KFORGE_IDEMPOTENCY_ROUNDS sets the rounds (100
// by default); the last line printed is the JSON bench/reliability/run.sh records.
// Run: scripts/test.sh build -R api_idempotency
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <thread>

#include "common/sha256.h"
#include "tests/server/api_fixture.h"
#include "tests/support/http_client.h"
#include "tests/support/worker_process.h"

using kforge::test::ApiServer;
using kforge::test::http_request;
using nlohmann::json;

TEST(ApiIdempotency, ParallelPostsWithOneKeyAndTwoBodies) {
  KFORGE_REQUIRE_DB();
  ApiServer server({"--db-pool-size", "12"});
  auto op = server.post("/v1/ops", kforge::test::sample_op("idem_race"), server.submit);
  ASSERT_EQ(op.status, 201) << op.body;
  int64_t op_id = json::parse(op.body)["id"].get<int64_t>();
  const std::string bodies[2] = {json{{"op_id", op_id}, {"samples", 3}}.dump(),
                                 json{{"op_id", op_id}, {"samples", 5}}.dump()};
  const char* configured = std::getenv("KFORGE_IDEMPOTENCY_ROUNDS");
  const int rounds = configured ? std::atoi(configured) : 100;
  constexpr int kParallel = 10;

  int mismatches = 0, requests = 0, replays = 0, refused = 0, in_progress = 0;
  for (int round_idx = 0; round_idx < rounds; ++round_idx) {
    std::string key = "race-" + std::to_string(round_idx);
    std::vector<kforge::test::RawResponse> responses(kParallel);
    std::vector<std::thread> threads;
    for (int post_idx = 0; post_idx < kParallel; ++post_idx) {
      threads.emplace_back([&, post_idx] {
        responses[post_idx] = http_request(server.port, "POST", "/v1/generations", bodies[post_idx % 2],
                                           {"Authorization: Bearer " + server.submit, "Idempotency-Key: " + key}, 30);
      });
    }
    for (auto& thread : threads) thread.join();
    requests += kParallel;

    // What the database says: the record's body hash, and the job it is bound to.
    std::string record_hash = kforge::test::sql_value(
        server.database.url(), "SELECT request_sha256 FROM idempotency_records WHERE key = '" + key + "'");
    std::string record_job = kforge::test::sql_value(
        server.database.url(), "SELECT job_id FROM idempotency_records WHERE key = '" + key + "'");
    std::string job_samples = kforge::test::sql_value(
        server.database.url(), "SELECT args->>'samples' FROM jobs WHERE id = " + (record_job.empty() ? "0" : record_job));
    std::string jobs_so_far = kforge::test::sql_value(server.database.url(), "SELECT count(*) FROM jobs");
    int winner = job_samples == "3" ? 0 : job_samples == "5" ? 1 : -1;
    bool round_ok = winner >= 0 && record_hash == kforge::sha256_hex(bodies[winner]) &&
                    jobs_so_far == std::to_string(round_idx + 1);
    for (int post_idx = 0; post_idx < kParallel; ++post_idx) {
      const auto& resp = responses[post_idx];
      bool same_body = post_idx % 2 == winner;
      if (resp.status == 202) {
        round_ok = round_ok && same_body && json::parse(resp.body)["id"].dump() == record_job;
        if (resp.headers.count("idempotent-replayed")) ++replays;
      } else if (resp.status == 422) {
        round_ok = round_ok && !same_body;
        ++refused;
      } else if (resp.status == 409) {
        round_ok = round_ok && resp.headers.count("retry-after");
        ++in_progress;
      } else {
        round_ok = false;
      }
    }
    if (!round_ok) {
      ++mismatches;
      ADD_FAILURE() << "round " << round_idx << ": record " << record_hash << " job " << record_job << " samples "
                    << job_samples << " jobs " << jobs_so_far << "; first status " << responses[0].status << " "
                    << responses[0].body.substr(0, 300);
    }
  }
  json summary = {{"rounds", rounds},       {"requests", requests},       {"idempotency_mismatches", mismatches},
                  {"replays", replays},     {"refused_other_body", refused}, {"in_progress_409", in_progress}};
  std::cout << "KFORGE_RESULT idempotency " << summary.dump() << std::endl;
  EXPECT_EQ(mismatches, 0);
}
