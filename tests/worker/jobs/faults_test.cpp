// The fault suite of issue 18 with every part real (kforge-server, kforge-worker,
// PostgreSQL, PoCL): a worker SIGKILLed mid-generation, PostgreSQL restarted
// mid-generation, the server SIGKILLed under load with clients retrying with their
// Idempotency-Keys. Afterwards no acknowledged job is lost, every generation has exactly
// `samples` candidates (none twice), none is stuck, and dead workers are marked dead.
// Counts: KFORGE_FAULT_WORKER_KILLS, KFORGE_FAULT_PG_RESTARTS, KFORGE_FAULT_SERVER_KILLS
// (small defaults for CI; bench/reliability/run.sh runs 20, 5, 5). Each test prints one
// "KFORGE_RESULT faults_<kind> {...}" line. Run: scripts/test.sh build -R jobs_faults
#include <gtest/gtest.h>

#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/server/api_fixture.h"
#include "tests/support/http_client.h"
#include "tests/support/private_cluster.h"
#include "tests/support/processes.h"
#include "tests/support/worker_process.h"
#include "worker/harness/devices.h"

using namespace std::chrono_literals;
using kforge::test::http_request;
using kforge::test::sql_value;
using kforge::test::wait_until;
using json = nlohmann::json;

namespace {

constexpr int kSamples = 4;

int env_count(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value && *value ? std::atoi(value) : fallback;
}

int64_t number(const std::string& url, const std::string& query) {
  std::string value = sql_value(url, query);
  return value.empty() ? 0 : std::stoll(value);
}

// What every fault run checks at the end, as the JSON bench/reliability records.
json outcome(const std::string& url, const std::set<int64_t>& acknowledged) {
  std::string ids;
  for (int64_t id : acknowledged) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  int64_t lost = number(url, "SELECT count(*) FROM unnest('{" + ids + "}'::bigint[]) AS a(id) WHERE NOT EXISTS "
                             "(SELECT 1 FROM jobs j WHERE j.id = a.id AND j.kind = 'generate')");
  return {
      {"jobs", number(url, "SELECT count(*) FROM jobs WHERE kind = 'generate'")},
      {"acknowledged", acknowledged.size()},
      {"lost_jobs", lost},
      {"duplicate_candidates",
       number(url, "SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM candidates "
                   "GROUP BY job_id, sample_idx HAVING count(*) > 1) d")},
      {"wrong_candidate_counts",
       number(url, "SELECT count(*) FROM jobs j WHERE j.kind = 'generate' AND j.state = 'completed' AND "
                   "(SELECT count(*) FROM candidates c WHERE c.job_id = j.id) <> (j.args->>'samples')::int")},
      {"stuck_jobs", number(url, "SELECT count(*) FROM jobs WHERE state NOT IN ('completed', 'failed', 'cancelled', "
                                 "'discarded')")},
      {"failed_jobs", number(url, "SELECT count(*) FROM jobs WHERE state IN ('failed', 'discarded')")},
      {"retried_jobs", number(url, "SELECT count(*) FROM jobs WHERE attempt > 1")},
  };
}

void expect_clean(const json& result) {
  EXPECT_EQ(result["lost_jobs"], 0) << result.dump();
  EXPECT_EQ(result["duplicate_candidates"], 0) << result.dump();
  EXPECT_EQ(result["wrong_candidate_counts"], 0) << result.dump();
  EXPECT_EQ(result["stuck_jobs"], 0) << result.dump();
  EXPECT_EQ(result["failed_jobs"], 0) << result.dump();
}

std::string mint(const std::string& url) {
  auto [code, output] = kforge::run_command({kforge::test::bin_path("kforge-server"), "token", "create", "--scope",
                                             "submit", "--database-url", url, "--log-level", "error"});
  EXPECT_EQ(code, 0) << output;
  while (!output.empty() && output.back() == '\n') output.pop_back();
  return output.substr(output.rfind('\n') == std::string::npos ? 0 : output.rfind('\n') + 1);
}

// One op per job: a fresh op is never in the harness result cache, so its checks take
// long enough for a fault to land in the middle of them.
int64_t create_op(int port, const std::string& token, const std::string& name) {
  auto resp = http_request(port, "POST", "/v1/ops", kforge::test::sample_op(name), {"Authorization: Bearer " + token}, 60);
  EXPECT_TRUE(resp.status == 201 || resp.status == 200) << resp.body;
  return json::parse(resp.body)["id"].get<int64_t>();
}

int64_t submit(int port, const std::string& token, int64_t op_id) {
  auto resp = http_request(port, "POST", "/v1/generations", json{{"op_id", op_id}, {"samples", kSamples}}.dump(),
                           {"Authorization: Bearer " + token}, 30);
  EXPECT_EQ(resp.status, 202) << resp.body;
  return json::parse(resp.body).value("id", int64_t{0});
}

// True once job `id` has written a candidate in its current attempt.
bool has_candidate_now(const std::string& url, int64_t id) {
  return number(url, "SELECT count(*) FROM candidates c JOIN jobs j ON j.id = c.job_id WHERE j.id = " +
                         std::to_string(id) + " AND j.state = 'running' AND c.attempt = j.attempt") > 0;
}

bool all_finished(const std::string& url) {
  return number(url, "SELECT count(*) FROM jobs WHERE state NOT IN ('completed', 'failed', 'cancelled', 'discarded')") == 0;
}

std::vector<std::string> worker_args(const std::string& lease_s) {
  return {"--poll-s", "0.2", "--lease-s", lease_s, "--rescue-s", "0.5", "--backoff-base-s", "0.1",
          "--backoff-cap-s", "1", "--dead-after-s", "3", "--shutdown-grace-s", "2"};
}

bool have_opencl() { return !kforge::harness::list_devices().empty(); }

}  // namespace

TEST(JobFaults, WorkerKilledMidGeneration) {
  KFORGE_REQUIRE_DB();
  if (!have_opencl()) GTEST_SKIP() << "no OpenCL device (install pocl-opencl-icd)";
  kforge::test::ApiServer server;
  const std::string& url = server.database.url();
  const int kills = env_count("KFORGE_FAULT_WORKER_KILLS", 2);
  std::string log;
  auto worker = kforge::test::start_worker("kforge-worker", url, worker_args("2"), &log);
  std::set<int64_t> acknowledged;
  int landed = 0;
  for (int kill_idx = 0; kill_idx < kills; ++kill_idx) {
    int64_t id = submit(server.port, server.submit, create_op(server.port, server.submit, "wkill_" + std::to_string(kill_idx)));
    acknowledged.insert(id);
    // Kill while the job is between candidates: at least one written in this attempt.
    if (wait_until([&] { return has_candidate_now(url, id); }, 240s)) ++landed;
    worker.signal(SIGKILL);
    worker.wait_for(10s);
    worker = kforge::test::start_worker("kforge-worker", url, worker_args("2"), &log);
  }
  ASSERT_TRUE(wait_until([&] { return all_finished(url); }, std::chrono::seconds(120 + 60 * kills)))
      << kforge::test::file_tail(log);
  // The killed workers stop heartbeating: the maintainer marks them dead and clears their jobs.
  EXPECT_TRUE(wait_until([&] { return number(url, "SELECT count(*) FROM workers WHERE state = 'dead'") >= kills; }, 30s))
      << sql_value(url, "SELECT string_agg(id || ':' || state, ' ') FROM workers");
  EXPECT_EQ(number(url, "SELECT count(*) FROM workers WHERE state = 'dead' AND cardinality(running_job_ids) > 0"), 0);
  worker.signal(SIGTERM);
  worker.wait_for(30s);
  json result = outcome(url, acknowledged);
  result["worker_sigkills"] = kills;
  result["kills_mid_generation"] = landed;
  result["dead_workers_marked"] = number(url, "SELECT count(*) FROM workers WHERE state = 'dead'");
  std::cout << "KFORGE_RESULT faults_worker_sigkill " << result.dump() << std::endl;
  expect_clean(result);
  EXPECT_EQ(landed, kills) << "a kill did not land mid-generation";
  // What a user sees agrees: candidates.total of each generation is `samples`.
  for (int64_t id : acknowledged) {
    auto gen = json::parse(server.get("/v1/generations/" + std::to_string(id)).body);
    EXPECT_EQ(gen["status"], "succeeded") << gen.dump();
    EXPECT_EQ(gen["candidates"]["total"], kSamples) << gen.dump();
  }
}

TEST(JobFaults, PostgresRestartedMidGeneration) {
  KFORGE_REQUIRE_DB();
  if (!have_opencl()) GTEST_SKIP() << "no OpenCL device (install pocl-opencl-icd)";
  kforge::test::PrivateCluster cluster;
  auto [code, output] = cluster.run("start");
  ASSERT_EQ(code, 0) << output;
  std::string url = cluster.url();
  int port = kforge::test::free_port();
  auto server = kforge::test::start_server(port, url, {"--probe-timeout-s", "15"});
  ASSERT_TRUE(kforge::test::wait_for_status(port, "/v1/ready", 200, 30s));
  std::string token = mint(url);
  const int restarts = env_count("KFORGE_FAULT_PG_RESTARTS", 1);
  std::string log;
  // A lease longer than the outage: the job itself must ride it out (reconnect, retry its write).
  auto worker = kforge::test::start_worker("kforge-worker", url, worker_args("20"), &log);
  std::set<int64_t> acknowledged;
  int landed = 0;
  for (int restart_idx = 0; restart_idx < restarts; ++restart_idx) {
    int64_t id = submit(port, token, create_op(port, token, "pgrestart_" + std::to_string(restart_idx)));
    acknowledged.insert(id);
    if (wait_until([&] { return has_candidate_now(url, id); }, 240s)) ++landed;
    ASSERT_EQ(cluster.run("stop").first, 0);
    std::this_thread::sleep_for(2s);
    ASSERT_EQ(cluster.run("start").first, 0);
    ASSERT_TRUE(kforge::test::wait_for_status(port, "/v1/ready", 200, 30s)) << "the server did not reconnect";
  }
  ASSERT_TRUE(wait_until([&] { return all_finished(url); }, std::chrono::seconds(120 + 60 * restarts)))
      << kforge::test::file_tail(log);
  worker.signal(SIGTERM);
  worker.wait_for(30s);
  json result = outcome(url, acknowledged);
  result["postgres_restarts"] = restarts;
  result["restarts_mid_generation"] = landed;
  std::cout << "KFORGE_RESULT faults_postgres_restart " << result.dump() << std::endl;
  expect_clean(result);
  EXPECT_EQ(landed, restarts);
  EXPECT_TRUE(server.running());
}

TEST(JobFaults, ServerKilledUnderLoad) {
  KFORGE_REQUIRE_DB();
  if (!have_opencl()) GTEST_SKIP() << "no OpenCL device (install pocl-opencl-icd)";
  kforge::test::ApiServer server;
  const std::string& url = server.database.url();
  const int kills = env_count("KFORGE_FAULT_SERVER_KILLS", 2);
  int64_t op_id = create_op(server.port, server.submit, "skill");
  std::string log;
  auto worker = kforge::test::start_worker("kforge-worker", url, worker_args("5"), &log);

  // Clients: each logical request keeps its Idempotency-Key across retries until it gets a 202.
  std::atomic<bool> stop{false};
  std::mutex mutex;
  std::set<int64_t> acknowledged;
  std::atomic<int> requests{0}, retries{0}, reads{0}, gave_up{0};
  std::vector<std::thread> clients;
  for (int client_idx = 0; client_idx < 3; ++client_idx) {
    clients.emplace_back([&, client_idx] {
      for (int req_idx = 0; !stop; ++req_idx) {
        std::string key = "client-" + std::to_string(client_idx) + "-" + std::to_string(req_idx);
        std::string body = json{{"op_id", op_id}, {"samples", 2}}.dump();
        auto deadline = std::chrono::steady_clock::now() + 60s;
        for (;;) {
          ++requests;
          auto resp = http_request(server.port, "POST", "/v1/generations", body,
                                   {"Authorization: Bearer " + server.submit, "Idempotency-Key: " + key}, 10);
          if (resp.status == 202) {
            std::lock_guard lock(mutex);
            acknowledged.insert(json::parse(resp.body)["id"].get<int64_t>());
            break;
          }
          ++retries;  // no answer (server down), 409 (in progress), 503: same key again
          if (std::chrono::steady_clock::now() > deadline) {
            ++gave_up;
            break;
          }
          std::this_thread::sleep_for(100ms);
        }
        if (http_request(server.port, "GET", "/v1/leaderboard/ops", "", {}, 5).status == 200) ++reads;
        std::this_thread::sleep_for(400ms);  // a few jobs a second: the worker keeps up
      }
    });
  }
  for (int kill_idx = 0; kill_idx < kills; ++kill_idx) {
    std::this_thread::sleep_for(1500ms);
    server.process.signal(SIGKILL);
    server.process.wait_for(10s);
    std::this_thread::sleep_for(300ms);
    server.process = kforge::test::start_server(server.port, url, {"--probe-timeout-s", "15"});
  }
  std::this_thread::sleep_for(1500ms);
  stop = true;
  for (auto& client : clients) client.join();
  ASSERT_TRUE(wait_until([&] { return all_finished(url); }, 300s)) << kforge::test::file_tail(log);
  worker.signal(SIGTERM);
  worker.wait_for(30s);
  json result = outcome(url, acknowledged);
  result["server_sigkills"] = kills;
  result["posts"] = requests.load();
  result["post_retries"] = retries.load();
  result["reads_ok"] = reads.load();
  result["clients_gave_up"] = gave_up.load();
  // A retried key must not have made a second job: every job is one the clients were told about.
  result["jobs_not_acknowledged"] = result["jobs"].get<int64_t>() - static_cast<int64_t>(acknowledged.size());
  std::cout << "KFORGE_RESULT faults_server_sigkill " << result.dump() << std::endl;
  expect_clean(result);
  EXPECT_EQ(result["clients_gave_up"], 0);
  EXPECT_EQ(result["jobs_not_acknowledged"], 0);
}
