// Several real worker processes (kforge-effect-worker: the worker loop plus an
// `effect` kind whose completion inserts into a side table in the same
// transaction) against real PostgreSQL: 4 x 4 slots burn 10,000 jobs exactly
// once; a SIGKILLed worker's job is rescued and completed by another; a database
// restart mid-run loses nothing. Run: scripts/test.sh build -R worker_cluster_test
#include <gtest/gtest.h>

#include <signal.h>

#include <thread>

#include "db/connection.h"
#include "db/migrations.h"
#include "db/queue.h"
#include "tests/support/private_cluster.h"
#include "tests/support/test_db.h"
#include "tests/support/worker_process.h"

using namespace kforge::db;
using namespace std::chrono_literals;
using kforge::test::file_tail;
using kforge::test::sql_value;
using kforge::test::wait_until;

namespace {

void create_effects_table(const std::string& url) {
  auto conn = connect(url);
  pqxx::work txn(*conn);
  txn.exec("CREATE TABLE effects (job_id bigint NOT NULL, pid integer NOT NULL)");
  txn.commit();
}

std::vector<int64_t> insert_effect_jobs(const std::string& url, int count, int sleep_ms) {
  auto conn = connect(url);
  std::vector<JobInsert> jobs(count);
  for (auto& job : jobs) {
    job.kind = "effect";
    job.args_json = R"({"sleep_ms": )" + std::to_string(sleep_ms) + "}";
  }
  return job_insert_many(*conn, jobs);
}

std::string logs_of(const std::vector<std::string>& paths) {
  std::string out;
  for (const auto& path : paths) out += "--- " + path + "\n" + file_tail(path, 1500);
  return out;
}

// Every job completed, every completion took effect exactly once.
void expect_exactly_once(const std::string& url, int count) {
  EXPECT_EQ(sql_value(url, "SELECT count(*) FROM jobs WHERE state = 'completed'"), std::to_string(count));
  EXPECT_EQ(sql_value(url, "SELECT count(*) FROM effects"), std::to_string(count)) << "an effect was lost or doubled";
  EXPECT_EQ(sql_value(url, "SELECT count(DISTINCT job_id) FROM effects"), std::to_string(count));
  EXPECT_EQ(sql_value(url, "SELECT count(*) FROM effects e JOIN jobs j ON j.id = e.job_id "
                           "WHERE (j.result->>'pid')::int <> e.pid"),
            "0")
      << "the effect must come from the worker whose result was stored";
}

}  // namespace

TEST(WorkerCluster, FourWorkersTimesFourSlotsBurnTenThousandJobsExactlyOnce) {
  KFORGE_REQUIRE_DB();
  kforge::test::TestDatabase database;
  create_effects_table(database.url());
  constexpr int kJobs = 10000;
  insert_effect_jobs(database.url(), kJobs, 0);
  std::vector<kforge::Subprocess> workers;
  std::vector<std::string> logs(4);
  auto started = std::chrono::steady_clock::now();
  for (int worker_idx = 0; worker_idx < 4; ++worker_idx) {
    workers.push_back(kforge::test::start_worker("kforge-effect-worker", database.url(),
                                                 {"--slots", "4", "--poll-s", "0.5"}, &logs[worker_idx]));
  }
  ASSERT_TRUE(wait_until([&] {
    return sql_value(database.url(), "SELECT count(*) FROM jobs WHERE state = 'completed'") == std::to_string(kJobs);
  }, 120s)) << logs_of(logs);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << kJobs << " jobs in " << seconds << " s with 4 workers x 4 slots (including start-up)\n";
  expect_exactly_once(database.url(), kJobs);
  EXPECT_EQ(sql_value(database.url(), "SELECT count(DISTINCT pid) FROM effects"), "4") << "all four workers took part";
  EXPECT_EQ(sql_value(database.url(), "SELECT max(attempt) FROM jobs"), "1");
  for (auto& worker : workers) worker.signal(SIGTERM);
  for (auto& worker : workers) {
    auto status = worker.wait_for(15s);
    ASSERT_TRUE(status);
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
  }
}

TEST(WorkerCluster, SigkilledWorkersJobIsRescuedAndCompletedByAnother) {
  KFORGE_REQUIRE_DB();
  kforge::test::TestDatabase database;
  create_effects_table(database.url());
  std::string log_a, log_b;
  // Lease 1 s: the killed worker's claim lapses a second after its last extension.
  std::vector<std::string> flags = {"--slots", "1", "--lease-s", "1", "--rescue-s", "0.2", "--backoff-base-s", "0",
                                    "--poll-s", "0.2"};
  auto worker_a = kforge::test::start_worker("kforge-effect-worker", database.url(), flags, &log_a);
  auto ids = insert_effect_jobs(database.url(), 1, 1500);
  int64_t id = ids[0];
  auto conn = connect(database.url());
  ASSERT_TRUE(wait_until([&] { return job_get(*conn, id)->state == JobState::running; }, 10s)) << file_tail(log_a);
  std::this_thread::sleep_for(300ms);
  worker_a.signal(SIGKILL);
  ASSERT_TRUE(worker_a.wait_for(5s));
  auto killed_at = std::chrono::steady_clock::now();
  auto worker_b = kforge::test::start_worker("kforge-effect-worker", database.url(), flags, &log_b);

  ASSERT_TRUE(wait_until([&] { return job_get(*conn, id)->state == JobState::completed; }, 20s))
      << logs_of({log_a, log_b});
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  std::cout << "rescued and completed " << took << " s after SIGKILL (lease 1 s, job 1.5 s)\n";
  auto job = job_get(*conn, id);
  EXPECT_EQ(job->attempt, 2);
  EXPECT_NE(job->errors_json.find("lease expired"), std::string::npos) << job->errors_json;
  expect_exactly_once(database.url(), 1);
  EXPECT_EQ(sql_value(database.url(), "SELECT pid FROM effects"), std::to_string(worker_b.pid()));
}

TEST(WorkerCluster, DatabaseRestartMidRunLosesNoJob) {
  KFORGE_REQUIRE_DB();  // needs the PostgreSQL binaries that make test installs
  kforge::test::PrivateCluster cluster;
  auto [code, out] = cluster.run("start");
  ASSERT_EQ(code, 0) << out;
  {
    auto conn = connect(cluster.url());
    migrate(*conn);
  }
  create_effects_table(cluster.url());
  constexpr int kJobs = 400;
  insert_effect_jobs(cluster.url(), kJobs, 20);
  std::vector<kforge::Subprocess> workers;
  std::vector<std::string> logs(2);
  for (int worker_idx = 0; worker_idx < 2; ++worker_idx) {
    workers.push_back(kforge::test::start_worker("kforge-effect-worker", cluster.url(),
                                                 {"--slots", "3", "--poll-s", "0.3", "--lease-s", "5",
                                                  "--rescue-s", "0.5", "--backoff-base-s", "0.1"},
                                                 &logs[worker_idx]));
  }
  ASSERT_TRUE(wait_until([&] {
    return std::stoi(sql_value(cluster.url(), "SELECT count(*) FROM jobs WHERE state = 'completed'")) >= 50;
  }, 30s)) << logs_of(logs);
  auto [stop_code, stop_out] = cluster.run("stop");
  ASSERT_EQ(stop_code, 0) << stop_out;
  std::this_thread::sleep_for(1500ms);
  for (auto& worker : workers) EXPECT_TRUE(worker.running()) << "a worker died with the database";
  auto [start_code, start_out] = cluster.run("start");
  ASSERT_EQ(start_code, 0) << start_out;

  ASSERT_TRUE(wait_until([&] {
    try {
      return sql_value(cluster.url(), "SELECT count(*) FROM jobs WHERE state = 'completed'") == std::to_string(kJobs);
    } catch (const std::exception&) {
      return false;
    }
  }, 60s)) << logs_of(logs);
  expect_exactly_once(cluster.url(), kJobs);
  for (auto& worker : workers) worker.signal(SIGTERM);
  for (auto& worker : workers) {
    auto status = worker.wait_for(20s);
    ASSERT_TRUE(status);
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << logs_of(logs);
  }
}
