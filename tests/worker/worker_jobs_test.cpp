// The real kforge-worker binary against a real PostgreSQL database per test:
// outcomes (complete, retry with backoff, fail, discard), progress, NOTIFY
// latency with a 5 s poll interval, cooperative cancel of a running job,
// graceful SIGTERM (finish, or release after the grace period), queue pause.
// Run: scripts/test.sh build -R worker_jobs_test
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <thread>

#include <nlohmann/json.hpp>

#include "db/connection.h"
#include "db/queue.h"
#include "tests/support/test_db.h"
#include "tests/support/worker_process.h"

using namespace kforge::db;
using namespace std::chrono_literals;
using kforge::test::sql_value;
using kforge::test::wait_until;

namespace {

class WorkerJobsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    KFORGE_REQUIRE_DB();
    database_ = std::make_unique<kforge::test::TestDatabase>();
    conn_ = connect(database_->url());
  }
  const std::string& url() const { return database_->url(); }
  kforge::Subprocess start(const std::vector<std::string>& args) {
    return kforge::test::start_worker("kforge-worker", url(), args, &log_);
  }
  // Waits until the worker's row says idle (registered, listening soon after).
  void wait_registered() {
    ASSERT_TRUE(wait_until([&] { return sql_value(url(), "SELECT count(*) FROM workers WHERE state = 'idle'") == "1"; },
                           20s))
        << kforge::test::file_tail(log_);
    std::this_thread::sleep_for(300ms);  // let the listener subscribe
  }
  int64_t insert(const std::string& args, int max_attempts = 3) {
    JobInsert job;
    job.kind = "noop";
    job.args_json = args;
    job.max_attempts = max_attempts;
    return job_insert(*conn_, job).job.id;
  }
  JobState state_of(int64_t id) { return job_get(*conn_, id)->state; }
  bool wait_state(int64_t id, JobState state, std::chrono::milliseconds timeout) {
    return wait_until([&] { return state_of(id) == state; }, timeout);
  }
  std::unique_ptr<kforge::test::TestDatabase> database_;
  std::unique_ptr<pqxx::connection> conn_;
  std::string log_;
};

}  // namespace

TEST_F(WorkerJobsTest, RunsJobsToEveryOutcome) {
  auto worker = start({"--slots", "2", "--backoff-base-s", "0.3", "--poll-s", "0.2"});
  int64_t ok = insert(R"({"sleep_ms": 300, "progress_steps": 3, "result": {"x": 1}})");
  int64_t flaky = insert(R"({"fail_attempts": 1})");
  int64_t broken = insert(R"({"fail_permanently": true})");
  int64_t hopeless = insert(R"({"fail_attempts": 10})", 2);
  int64_t bad_args = insert(R"({"sleep_ms": "long"})");

  ASSERT_TRUE(wait_until([&] {
    return sql_value(url(), "SELECT count(*) FROM jobs WHERE finished_at IS NULL") == "0";
  }, 20s)) << kforge::test::file_tail(log_);

  auto done = job_get(*conn_, ok);
  EXPECT_EQ(done->state, JobState::completed);
  auto result = nlohmann::json::parse(done->result_json);
  EXPECT_EQ(result["echo"]["x"], 1);
  EXPECT_EQ(result["attempt"], 1);
  EXPECT_EQ(nlohmann::json::parse(done->progress_json)["step"], 3) << done->progress_json;

  auto retried = job_get(*conn_, flaky);
  EXPECT_EQ(retried->state, JobState::completed);
  EXPECT_EQ(retried->attempt, 2);
  auto errors = nlohmann::json::parse(retried->errors_json);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0]["error"], "noop: told to fail attempt 1");
  // The retry waited for the backoff (0.3 s +- 10 %) before its second attempt.
  double gap = std::stod(sql_value(url(), "SELECT extract(epoch FROM attempted_at - (errors->0->>'at')::timestamptz) "
                                          "FROM jobs WHERE id = " + std::to_string(flaky)));
  EXPECT_GE(gap, 0.26);
  EXPECT_LE(gap, 1.5) << "a NOTIFY on failure plus next-due wake-up should start it near its due time";

  EXPECT_EQ(state_of(broken), JobState::failed);
  EXPECT_EQ(job_get(*conn_, broken)->attempt, 1);
  auto discarded = job_get(*conn_, hopeless);
  EXPECT_EQ(discarded->state, JobState::discarded);
  EXPECT_EQ(nlohmann::json::parse(discarded->errors_json).size(), 2u);
  auto refused = job_get(*conn_, bad_args);
  EXPECT_EQ(refused->state, JobState::failed);
  EXPECT_NE(refused->errors_json.find("bad args"), std::string::npos) << refused->errors_json;
}

TEST_F(WorkerJobsTest, NotifyStartsJobsWithinMillisecondsDespiteSlowPolling) {
  auto worker = start({"--slots", "1", "--poll-s", "5"});
  wait_registered();
  std::vector<int64_t> ids;
  for (int job_idx = 0; job_idx < 20; ++job_idx) {
    ids.push_back(insert("{}"));
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(wait_until([&] {
    return sql_value(url(), "SELECT count(*) FROM jobs WHERE state = 'completed'") == "20";
  }, 10s)) << kforge::test::file_tail(log_);
  // Insert-to-claim latency on the database's clock: created_at is the insert
  // transaction's start, attempted_at the claim transaction's.
  pqxx::read_transaction txn(*conn_);
  std::vector<double> latencies_ms;
  for (const auto& row : txn.exec("SELECT extract(epoch FROM attempted_at - created_at) * 1000 FROM jobs")) {
    latencies_ms.push_back(row[0].as<double>());
  }
  std::sort(latencies_ms.begin(), latencies_ms.end());
  double median = latencies_ms[latencies_ms.size() / 2];
  double worst = latencies_ms.back();
  std::cout << "insert-to-claim latency: median " << median << " ms, max " << worst << " ms (poll interval 5 s)\n";
  EXPECT_LT(median, 50.0);
  EXPECT_LT(worst, 1000.0) << "a job waited for the poll timer: the NOTIFY path missed it";
}

TEST_F(WorkerJobsTest, CancelStopsARunningJobAtItsNextCheckpoint) {
  auto worker = start({"--slots", "1", "--poll-s", "0.2", "--heartbeat-s", "0.2"});
  int64_t id = insert(R"({"sleep_ms": 30000, "progress_steps": 300})");
  ASSERT_TRUE(wait_state(id, JobState::running, 10s)) << kforge::test::file_tail(log_);
  // The workers row says busy and names the job.
  EXPECT_TRUE(wait_until([&] {
    return sql_value(url(), "SELECT state || ':' || array_to_string(running_job_ids, ',') FROM workers") ==
           "busy:" + std::to_string(id);
  }, 3s)) << sql_value(url(), "SELECT state || ':' || array_to_string(running_job_ids, ',') FROM workers");
  // Progress is saved while it runs.
  ASSERT_TRUE(wait_until([&] { return job_get(*conn_, id)->progress_json != "{}"; }, 5s));
  EXPECT_EQ(job_cancel(*conn_, id), CancelResult::cancel_requested);
  auto started = std::chrono::steady_clock::now();
  ASSERT_TRUE(wait_state(id, JobState::cancelled, 5s)) << kforge::test::file_tail(log_);
  auto took = std::chrono::steady_clock::now() - started;
  EXPECT_LT(took, 2s) << "cancel should travel by NOTIFY, not wait for a lease heartbeat";
  auto job = job_get(*conn_, id);
  EXPECT_TRUE(job->cancel_requested);
  EXPECT_NE(job->errors_json.find("cancel"), std::string::npos) << job->errors_json;
  // The worker goes on to the next job.
  int64_t next = insert("{}");
  EXPECT_TRUE(wait_state(next, JobState::completed, 5s));
}

TEST_F(WorkerJobsTest, SigtermFinishesRunningJobsWithinGrace) {
  auto worker = start({"--slots", "2", "--poll-s", "0.2", "--shutdown-grace-s", "10"});
  int64_t id = insert(R"({"sleep_ms": 1000})");
  ASSERT_TRUE(wait_state(id, JobState::running, 10s)) << kforge::test::file_tail(log_);
  worker.signal(SIGTERM);
  // No new claims after SIGTERM.
  int64_t late = insert("{}");
  auto status = worker.wait_for(15s);
  ASSERT_TRUE(status) << "worker did not exit";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << kforge::test::file_tail(log_);
  EXPECT_EQ(state_of(id), JobState::completed);
  EXPECT_EQ(state_of(late), JobState::available);
  EXPECT_EQ(sql_value(url(), "SELECT state FROM workers"), "stopped");
}

TEST_F(WorkerJobsTest, SigtermReleasesJobsThatOutliveTheGrace) {
  auto worker = start({"--slots", "1", "--poll-s", "0.2", "--shutdown-grace-s", "0.3"});
  int64_t id = insert(R"({"sleep_ms": 60000})");
  ASSERT_TRUE(wait_state(id, JobState::running, 10s)) << kforge::test::file_tail(log_);
  worker.signal(SIGTERM);
  auto status = worker.wait_for(10s);
  ASSERT_TRUE(status) << "worker did not exit";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << kforge::test::file_tail(log_);
  auto job = job_get(*conn_, id);
  EXPECT_EQ(job->state, JobState::available) << "released, ready for another worker";
  EXPECT_EQ(job->attempt, 0) << "the interrupted attempt does not count";
}

TEST_F(WorkerJobsTest, PausedQueueWaitsForResume) {
  queue_pause(*conn_, "default");
  auto worker = start({"--slots", "1", "--poll-s", "5"});
  wait_registered();
  int64_t id = insert("{}");
  std::this_thread::sleep_for(700ms);
  EXPECT_EQ(state_of(id), JobState::available);
  queue_resume(*conn_, "default");
  EXPECT_TRUE(wait_state(id, JobState::completed, 2s)) << "resume should wake the worker via NOTIFY";
}

TEST_F(WorkerJobsTest, LostNotifyOrDroppedListenerOnlyCostsThePollInterval) {
  auto worker = start({"--slots", "1", "--poll-s", "1"});
  wait_registered();
  // A job inserted without NOTIFY (plain SQL) is found by polling.
  auto plain = std::stoll(sql_value(url(), "INSERT INTO jobs (kind) VALUES ('noop') RETURNING id"));
  EXPECT_TRUE(wait_state(plain, JobState::completed, 3s)) << kforge::test::file_tail(log_);

  // Kill the listener's connection: polling carries on, the listener reconnects.
  ASSERT_EQ(sql_value(url(), "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                             "WHERE datname = current_database() AND query LIKE 'LISTEN%'"),
            "1");
  int64_t during = insert("{}");
  EXPECT_TRUE(wait_state(during, JobState::completed, 3s)) << kforge::test::file_tail(log_);
  ASSERT_TRUE(wait_until([&] {
    return sql_value(url(), "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                            "AND query LIKE 'LISTEN%'") == "1";
  }, 5s)) << "listener did not reconnect\n" << kforge::test::file_tail(log_);
  std::this_thread::sleep_for(300ms);
  // Back on the NOTIFY path: well under the 1 s poll interval.
  int64_t after = insert("{}");
  ASSERT_TRUE(wait_state(after, JobState::completed, 3s));
  double latency_ms = std::stod(sql_value(url(), "SELECT extract(epoch FROM attempted_at - created_at) * 1000 "
                                                 "FROM jobs WHERE id = " + std::to_string(after)));
  EXPECT_LT(latency_ms, 300.0);
  EXPECT_TRUE(worker.running());
}
