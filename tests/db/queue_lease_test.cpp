// Worker side of the job queue against a real PostgreSQL database per test:
// claim order and batches, SKIP LOCKED under concurrent claimers, heartbeat,
// lease-owner check, completion hooks, backoff, discard, rescue election, release.
// Run: scripts/test.sh build -R db_queue_lease_test
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "db/connection.h"
#include "db/queue.h"
#include "tests/support/test_db.h"

using namespace kforge::db;
using namespace std::chrono_literals;

namespace {

class LeaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    KFORGE_REQUIRE_DB();
    database_ = std::make_unique<kforge::test::TestDatabase>();
    conn_ = connect(database_->url());
    pqxx::work txn(*conn_);
    txn.exec("CREATE TABLE effects (job_id bigint NOT NULL, note text)");
    txn.commit();
  }
  std::string scalar(const std::string& query) {
    pqxx::work txn(*conn_);
    auto row = txn.exec1(query);
    txn.commit();
    return row[0].is_null() ? "" : row[0].as<std::string>();
  }
  int64_t insert(const std::string& kind = "noop", int priority = 2, int max_attempts = 3) {
    JobInsert job;
    job.kind = kind;
    job.priority = priority;
    job.max_attempts = max_attempts;
    return job_insert(*conn_, job).job.id;
  }
  std::vector<Job> claim(int64_t worker_id, int limit = 1, double lease_seconds = 30) {
    ClaimRequest request;
    request.worker_id = worker_id;
    request.limit = limit;
    request.lease_seconds = lease_seconds;
    return job_claim(*conn_, request);
  }
  // Ages a job's lease so the rescuer sees it expired.
  void expire_lease(int64_t id) {
    scalar("UPDATE jobs SET lease_expires_at = now() - interval '1 second' WHERE id = " + std::to_string(id) +
           " RETURNING id");
  }
  std::unique_ptr<kforge::test::TestDatabase> database_;
  std::unique_ptr<pqxx::connection> conn_;
};

CompleteHook record_effect(int64_t job_id) {
  return [job_id](pqxx::transaction_base& txn) {
    txn.exec_params0("INSERT INTO effects (job_id) VALUES ($1)", job_id);
  };
}

}  // namespace

TEST_F(LeaseTest, ClaimFollowsPriorityThenAgeAndBatches) {
  int64_t low = insert("noop", 5);
  int64_t first = insert("noop", 1);
  int64_t second = insert("noop", 1);
  int64_t urgent = insert("noop", 0);
  auto batch = claim(11, 3, 30);
  ASSERT_EQ(batch.size(), 3u);
  EXPECT_EQ(batch[0].id, urgent);
  EXPECT_EQ(batch[1].id, first);
  EXPECT_EQ(batch[2].id, second);
  for (const auto& job : batch) {
    EXPECT_EQ(job.state, JobState::running);
    EXPECT_EQ(job.attempt, 1);
    EXPECT_EQ(job.worker_id.value_or(-1), 11);
    EXPECT_NE(job.attempted_at, "");
    EXPECT_NE(job.lease_expires_at, "");
  }
  auto rest = claim(11, 10);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].id, low);
  EXPECT_TRUE(claim(11, 10).empty());
}

TEST_F(LeaseTest, ClaimSkipsFutureJobsAndOtherKindsAndQueues) {
  JobInsert later;
  later.kind = "noop";
  later.delay_seconds = 3600;
  job_insert(*conn_, later);
  JobInsert other_queue;
  other_queue.kind = "noop";
  other_queue.queue = "gpu";
  int64_t gpu_job = job_insert(*conn_, other_queue).job.id;
  int64_t train = insert("train_sft");
  ClaimRequest request;
  request.worker_id = 3;
  request.limit = 10;
  request.kinds = {"noop"};
  EXPECT_TRUE(job_claim(*conn_, request).empty()) << "future noop, gpu-queue noop and train_sft are not ours";
  request.kinds = {"noop", "train_sft"};
  auto got = job_claim(*conn_, request);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].id, train);
  request.queue = "gpu";
  got = job_claim(*conn_, request);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].id, gpu_job);
  auto due = job_next_due(*conn_, "default", {"noop"});
  ASSERT_TRUE(due);
  EXPECT_GT(*due, 3500);
  EXPECT_FALSE(job_next_due(*conn_, "nothing-here"));
}

TEST_F(LeaseTest, ConcurrentClaimersNeverShareAJob) {
  std::vector<JobInsert> jobs(2000);
  for (auto& job : jobs) job.kind = "noop";
  job_insert_many(*conn_, jobs);
  std::mutex mutex;
  std::multiset<int64_t> claimed;
  std::vector<std::thread> claimers;
  for (int claimer_idx = 0; claimer_idx < 6; ++claimer_idx) {
    claimers.emplace_back([&, claimer_idx] {
      auto conn = connect(database_->url());
      ClaimRequest request;
      request.worker_id = 100 + claimer_idx;
      request.limit = 7;
      for (;;) {
        auto batch = job_claim(*conn, request);
        if (batch.empty()) break;
        std::lock_guard lock(mutex);
        for (const auto& job : batch) claimed.insert(job.id);
      }
    });
  }
  for (auto& claimer : claimers) claimer.join();
  EXPECT_EQ(claimed.size(), 2000u);
  std::set<int64_t> distinct(claimed.begin(), claimed.end());
  EXPECT_EQ(distinct.size(), 2000u) << "a job was claimed twice";
  EXPECT_EQ(scalar("SELECT count(*) FROM jobs WHERE state = 'running' AND attempt = 1"), "2000");
}

TEST_F(LeaseTest, HeartbeatExtendsLeaseAndStoresProgress) {
  insert();
  auto job = claim(5, 1, 2)[0];
  auto before = scalar("SELECT lease_expires_at FROM jobs WHERE id = " + std::to_string(job.id));
  auto beat = job_heartbeat(*conn_, job_lease(job), 600, R"({"step": 3, "of": 10})");
  EXPECT_TRUE(beat.lease_held);
  EXPECT_FALSE(beat.cancel_requested);
  EXPECT_EQ(scalar("SELECT round(extract(epoch FROM lease_expires_at - now()) / 100) FROM jobs WHERE id = " +
                   std::to_string(job.id)),
            "6");
  auto stored = job_get(*conn_, job.id);
  EXPECT_EQ(nlohmann::json::parse(stored->progress_json)["step"], 3);
  // Without progress the stored progress stays.
  job_heartbeat(*conn_, job_lease(job), 600);
  EXPECT_EQ(nlohmann::json::parse(job_get(*conn_, job.id)->progress_json)["of"], 10);
  EXPECT_THROW(job_heartbeat(*conn_, job_lease(job), 600, "{bad"), std::invalid_argument);

  // Batched extension reports which leases are held.
  JobLease stranger{job.id, 99, job.attempt};
  auto results = job_extend_leases(*conn_, 5, {job_lease(job)}, 30);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].lease_held);
  EXPECT_FALSE(job_extend_leases(*conn_, 99, {stranger}, 30)[0].lease_held);
}

TEST_F(LeaseTest, WorkerThatLostItsLeaseCannotCompleteOrFail) {
  int64_t id = insert();
  auto first = claim(1, 1, 30)[0];
  expire_lease(id);
  auto rescued = job_rescue(*conn_, BackoffPolicy{0, 0, 0});
  EXPECT_TRUE(rescued.elected);
  EXPECT_EQ(rescued.retried, 1);
  auto second = claim(2, 1, 30);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].attempt, 2);

  EXPECT_FALSE(job_complete(*conn_, job_lease(first), R"({"by": 1})", record_effect(id)));
  EXPECT_FALSE(job_fail(*conn_, job_lease(first), "late", true).lease_held);
  EXPECT_FALSE(job_heartbeat(*conn_, job_lease(first), 30).lease_held);
  EXPECT_FALSE(job_release(*conn_, job_lease(first)));
  // The same worker re-claiming later holds a different attempt: an old lease with its id still fails.
  JobLease forged{id, 2, 1};
  EXPECT_FALSE(job_complete(*conn_, forged, "{}"));
  EXPECT_EQ(scalar("SELECT count(*) FROM effects"), "0") << "no side effect from the loser";

  EXPECT_TRUE(job_complete(*conn_, job_lease(second[0]), R"({"by": 2})", record_effect(id)));
  auto done = job_get(*conn_, id);
  EXPECT_EQ(done->state, JobState::completed);
  EXPECT_EQ(nlohmann::json::parse(done->result_json)["by"], 2);
  EXPECT_EQ(scalar("SELECT count(*) FROM effects WHERE job_id = " + std::to_string(id)), "1");
  auto errors = nlohmann::json::parse(done->errors_json);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0]["error"].get<std::string>().find("lease expired"), std::string::npos);
}

TEST_F(LeaseTest, CompleteHookRunsInTheSameTransaction) {
  int64_t id = insert();
  auto job = claim(1)[0];
  auto failing_hook = [](pqxx::transaction_base& txn) { txn.exec("INSERT INTO no_such_table VALUES (1)"); };
  EXPECT_THROW(job_complete(*conn_, job_lease(job), "{}", failing_hook), pqxx::sql_error);
  EXPECT_EQ(job_get(*conn_, id)->state, JobState::running) << "a failed hook rolls the completion back";
  EXPECT_TRUE(job_complete(*conn_, job_lease(job), R"({"ok": true})", record_effect(id)));
  EXPECT_EQ(scalar("SELECT count(*) FROM effects"), "1");
}

TEST_F(LeaseTest, BatchedCompletionChecksEachLease) {
  for (int job_idx = 0; job_idx < 5; ++job_idx) insert();
  auto jobs = claim(4, 5);
  ASSERT_EQ(jobs.size(), 5u);
  // Job 2 is lost to the rescuer and another worker before the batch lands.
  expire_lease(jobs[2].id);
  job_rescue(*conn_, BackoffPolicy{0, 0, 0});
  auto thief = claim(8, 1);
  ASSERT_EQ(thief.size(), 1u);
  std::vector<Completion> batch;
  for (const auto& job : jobs) {
    batch.push_back({job_lease(job), R"({"id": )" + std::to_string(job.id) + "}", record_effect(job.id), ""});
  }
  auto completed = job_complete_many(*conn_, 4, batch);
  EXPECT_EQ(completed, (std::vector<bool>{true, true, false, true, true}));
  EXPECT_EQ(scalar("SELECT count(*) FROM jobs WHERE state = 'completed'"), "4");
  EXPECT_EQ(scalar("SELECT count(*) FROM effects"), "4");
  EXPECT_EQ(scalar("SELECT count(*) FROM effects WHERE job_id = " + std::to_string(jobs[2].id)), "0");
  EXPECT_EQ(nlohmann::json::parse(job_get(*conn_, jobs[4].id)->result_json)["id"], jobs[4].id);
}

TEST_F(LeaseTest, FailRetriesWithExponentialBackoffThenDiscards) {
  int64_t id = insert("noop", 2, 4);
  BackoffPolicy backoff{10, 3600, 0.1};
  std::vector<double> delays;
  for (int attempt = 1; attempt <= 3; ++attempt) {
    // Make the retry due now so the next claim gets it.
    scalar("UPDATE jobs SET scheduled_at = now() WHERE id = " + std::to_string(id) + " RETURNING id");
    auto job = claim(1);
    ASSERT_EQ(job.size(), 1u) << "attempt " << attempt;
    EXPECT_EQ(job[0].attempt, attempt);
    auto failed = job_fail(*conn_, job_lease(job[0]), "boom " + std::to_string(attempt), true, backoff);
    ASSERT_TRUE(failed.lease_held);
    EXPECT_EQ(failed.state, JobState::retryable);
    delays.push_back(failed.retry_in_seconds);
    EXPECT_EQ(job_get(*conn_, id)->state, JobState::retryable);
  }
  // base 10 s doubling: 10, 20, 40 s, each within +-10 % jitter.
  for (size_t attempt_idx = 0; attempt_idx < delays.size(); ++attempt_idx) {
    double expected = 10.0 * (1 << attempt_idx);
    EXPECT_GE(delays[attempt_idx], expected * 0.9 - 0.05) << "attempt " << attempt_idx + 1;
    EXPECT_LE(delays[attempt_idx], expected * 1.1 + 0.05) << "attempt " << attempt_idx + 1;
  }
  scalar("UPDATE jobs SET scheduled_at = now() WHERE id = " + std::to_string(id) + " RETURNING id");
  auto last = claim(1);
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0].attempt, 4);
  auto discarded = job_fail(*conn_, job_lease(last[0]), "boom 4", true, backoff);
  EXPECT_EQ(discarded.state, JobState::discarded);
  auto job = job_get(*conn_, id);
  EXPECT_EQ(job->state, JobState::discarded);
  EXPECT_NE(job->finished_at, "");
  auto errors = nlohmann::json::parse(job->errors_json);
  ASSERT_EQ(errors.size(), 4u);
  for (int attempt_idx = 0; attempt_idx < 4; ++attempt_idx) {
    EXPECT_EQ(errors[attempt_idx]["attempt"], attempt_idx + 1);
    EXPECT_EQ(errors[attempt_idx]["error"], "boom " + std::to_string(attempt_idx + 1));
  }
  // The backoff is capped.
  int64_t capped = insert("noop", 2, 10);
  scalar("UPDATE jobs SET attempt = 8 WHERE id = " + std::to_string(capped) + " RETURNING id");
  auto ninth = claim(1);
  ASSERT_EQ(ninth.size(), 1u);
  auto capped_fail = job_fail(*conn_, job_lease(ninth[0]), "x", true, BackoffPolicy{10, 60, 0});
  EXPECT_NEAR(capped_fail.retry_in_seconds, 60, 0.5);
}

TEST_F(LeaseTest, NonRetryableFailureIsTerminalAtOnce) {
  int64_t id = insert("noop", 2, 5);
  auto job = claim(1)[0];
  auto result = job_fail(*conn_, job_lease(job), "op source does not compile", false);
  EXPECT_EQ(result.state, JobState::failed);
  EXPECT_EQ(job_get(*conn_, id)->state, JobState::failed);
  EXPECT_TRUE(claim(1, 5).empty());
}

TEST_F(LeaseTest, RescueRetriesDiscardsAndCancelsExpiredJobs) {
  int64_t retry = insert("noop", 2, 3);
  int64_t last_try = insert("noop", 2, 1);
  int64_t cancel = insert("noop", 2, 3);
  int64_t healthy = insert("noop", 2, 3);
  auto jobs = claim(9, 4, 30);
  ASSERT_EQ(jobs.size(), 4u);
  job_cancel(*conn_, cancel);
  for (int64_t id : {retry, last_try, cancel}) expire_lease(id);
  auto result = job_rescue(*conn_, BackoffPolicy{0, 0, 0});
  EXPECT_TRUE(result.elected);
  EXPECT_EQ(result.retried, 1);
  EXPECT_EQ(result.discarded, 1);
  EXPECT_EQ(result.cancelled, 1);
  EXPECT_EQ(job_get(*conn_, retry)->state, JobState::retryable);
  EXPECT_EQ(job_get(*conn_, last_try)->state, JobState::discarded);
  EXPECT_EQ(job_get(*conn_, cancel)->state, JobState::cancelled);
  EXPECT_EQ(job_get(*conn_, healthy)->state, JobState::running);
}

TEST_F(LeaseTest, OnlyOneRescuerAtATime) {
  int64_t id = insert();
  claim(1, 1, 30);
  expire_lease(id);
  // Another process holds the maintenance lock (inside its open transaction).
  auto other = connect(database_->url());
  pqxx::work holder(*other);
  ASSERT_TRUE(holder.exec1("SELECT pg_try_advisory_xact_lock(" + std::to_string(0x6b666f7267650002LL) + ")")[0]
                  .as<bool>());
  auto skipped = job_rescue(*conn_);
  EXPECT_FALSE(skipped.elected);
  EXPECT_EQ(job_get(*conn_, id)->state, JobState::running);
  holder.abort();
  auto done = job_rescue(*conn_, BackoffPolicy{0, 0, 0});
  EXPECT_TRUE(done.elected);
  EXPECT_EQ(done.retried, 1);
}

TEST_F(LeaseTest, ReleaseGivesTheAttemptBack) {
  int64_t id = insert();
  auto job = claim(1)[0];
  EXPECT_EQ(job.attempt, 1);
  EXPECT_TRUE(job_release(*conn_, job_lease(job)));
  auto released = job_get(*conn_, id);
  EXPECT_EQ(released->state, JobState::available);
  EXPECT_EQ(released->attempt, 0);
  auto again = claim(2);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].attempt, 1);
  // Released after a cancel request: cancelled, not available.
  job_cancel(*conn_, id);
  EXPECT_TRUE(job_release(*conn_, job_lease(again[0])));
  EXPECT_EQ(job_get(*conn_, id)->state, JobState::cancelled);
}
