// Server side of the job queue against a real PostgreSQL database per test:
// insert (validation, idempotency, batches), get, list with cursor, cancel,
// NOTIFY on insert, pause/resume, prune, schema invariants, dead workers.
// Run: scripts/test.sh build -R db_queue_test
#include <gtest/gtest.h>

#include <set>

#include <nlohmann/json.hpp>

#include "db/connection.h"
#include "db/queue.h"
#include "db/workers.h"
#include "tests/support/test_db.h"

using namespace kforge::db;

namespace {

class QueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    KFORGE_REQUIRE_DB();
    database_ = std::make_unique<kforge::test::TestDatabase>();
    conn_ = connect(database_->url());
  }
  // Runs one statement and returns the first column of the first row as text.
  std::string scalar(const std::string& query) {
    pqxx::work txn(*conn_);
    auto row = txn.exec1(query);
    txn.commit();
    return row[0].is_null() ? "" : row[0].as<std::string>();
  }
  std::unique_ptr<kforge::test::TestDatabase> database_;
  std::unique_ptr<pqxx::connection> conn_;
};

JobInsert make_job(const std::string& kind, const std::string& args = "{}") {
  JobInsert job;
  job.kind = kind;
  job.args_json = args;
  return job;
}

}  // namespace

TEST(JobStateNames, RoundTripAndRejectUnknown) {
  for (auto state : {JobState::available, JobState::scheduled, JobState::running, JobState::retryable,
                     JobState::completed, JobState::failed, JobState::cancelled, JobState::discarded}) {
    EXPECT_EQ(job_state_from_string(to_string(state)), state);
  }
  EXPECT_EQ(to_string(JobState::retryable), "retryable");
  try {
    job_state_from_string("done");
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'done'"), std::string::npos) << e.what();
  }
}

TEST_F(QueueTest, InsertReturnsTheStoredJob) {
  JobInsert insert = make_job("generate", R"({"op": "silu_mul", "n": 4})");
  insert.priority = 1;
  insert.max_attempts = 5;
  auto result = job_insert(*conn_, insert);
  EXPECT_TRUE(result.inserted);
  const Job& job = result.job;
  EXPECT_GT(job.id, 0);
  EXPECT_EQ(job.kind, "generate");
  EXPECT_EQ(job.queue, "default");
  EXPECT_EQ(job.state, JobState::available);
  EXPECT_EQ(job.priority, 1);
  EXPECT_EQ(nlohmann::json::parse(job.args_json)["op"], "silu_mul");
  EXPECT_EQ(job.progress_json, "{}");
  EXPECT_EQ(job.result_json, "null");
  EXPECT_EQ(job.errors_json, "[]");
  EXPECT_EQ(job.attempt, 0);
  EXPECT_EQ(job.max_attempts, 5);
  EXPECT_EQ(job.finished_at, "");
  EXPECT_EQ(job.attempted_at, "");
  EXPECT_FALSE(job.worker_id);
  ASSERT_EQ(job.created_at.size(), std::string("2026-11-22T08:00:00.123456Z").size()) << job.created_at;
  EXPECT_EQ(job.created_at.back(), 'Z');
  EXPECT_EQ(job.created_at[10], 'T');

  auto fetched = job_get(*conn_, job.id);
  ASSERT_TRUE(fetched);
  EXPECT_EQ(fetched->args_json, job.args_json);
  EXPECT_EQ(fetched->created_at, job.created_at);
  EXPECT_FALSE(job_get(*conn_, job.id + 1000));
}

TEST_F(QueueTest, DelayedInsertIsScheduled) {
  JobInsert insert = make_job("evaluate");
  insert.delay_seconds = 60;
  auto job = job_insert(*conn_, insert).job;
  EXPECT_EQ(job.state, JobState::scheduled);
  EXPECT_EQ(scalar("SELECT round(extract(epoch FROM scheduled_at - created_at))::int FROM jobs WHERE id = " +
                   std::to_string(job.id)),
            "60");
}

TEST_F(QueueTest, BadInsertsNameTheField) {
  auto expect_error = [this](JobInsert insert, const std::string& needle) {
    try {
      job_insert(*conn_, insert);
      ADD_FAILURE() << "expected an error mentioning " << needle;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error(make_job(""), "kind");
  expect_error(make_job("Generate"), "kind");
  expect_error(make_job("generate", "{not json"), "args_json");
  JobInsert bad = make_job("generate");
  bad.priority = 10;
  expect_error(bad, "priority");
  bad = make_job("generate");
  bad.max_attempts = 0;
  expect_error(bad, "max_attempts");
  bad = make_job("generate");
  bad.queue = "has space";
  expect_error(bad, "queue");
  bad = make_job("generate");
  bad.delay_seconds = -1;
  expect_error(bad, "delay_seconds");
  EXPECT_EQ(scalar("SELECT count(*) FROM jobs"), "0");
}

TEST_F(QueueTest, IdempotentInsertReturnsTheInFlightJob) {
  JobInsert insert = make_job("generate", R"({"n": 1})");
  insert.idempotency_key = "req-42";
  auto first = job_insert(*conn_, insert);
  ASSERT_TRUE(first.inserted);
  insert.args_json = R"({"n": 2})";
  auto second = job_insert(*conn_, insert);
  EXPECT_FALSE(second.inserted);
  EXPECT_EQ(second.job.id, first.job.id);
  EXPECT_EQ(nlohmann::json::parse(second.job.args_json)["n"], 1) << "the existing job comes back unchanged";
  EXPECT_EQ(scalar("SELECT count(*) FROM jobs"), "1");

  // Once the job is finished the key is free again.
  ASSERT_EQ(job_cancel(*conn_, first.job.id), CancelResult::cancelled);
  auto third = job_insert(*conn_, insert);
  EXPECT_TRUE(third.inserted);
  EXPECT_NE(third.job.id, first.job.id);
  EXPECT_EQ(third.job.idempotency_key, "req-42");
}

TEST_F(QueueTest, InsertManyKeepsOrderAndHonoursKeys) {
  JobInsert keyed = make_job("generate");
  keyed.idempotency_key = "k1";
  auto existing = job_insert(*conn_, keyed).job;

  std::vector<JobInsert> batch;
  for (int job_idx = 0; job_idx < 12000; ++job_idx) {
    batch.push_back(make_job("noop", R"({"i": )" + std::to_string(job_idx) + "}"));
    if (job_idx == 7000) batch.push_back(keyed);
  }
  auto ids = job_insert_many(*conn_, batch);
  ASSERT_EQ(ids.size(), batch.size());
  EXPECT_EQ(ids[7001], existing.id) << "the keyed position holds the in-flight job";
  // Positions map to the args they were given, in order.
  for (size_t probe : {size_t(0), size_t(4999), size_t(5000), size_t(7000), size_t(7002), size_t(12000)}) {
    auto job = job_get(*conn_, ids[probe]);
    ASSERT_TRUE(job);
    int expected = probe <= 7000 ? int(probe) : int(probe) - 1;
    EXPECT_EQ(nlohmann::json::parse(job->args_json)["i"], expected) << "position " << probe;
  }
  EXPECT_EQ(scalar("SELECT count(*) FROM jobs"), "12001");
  EXPECT_TRUE(job_insert_many(*conn_, {}).empty());
}

TEST_F(QueueTest, ListIsNewestFirstWithAStableCursor) {
  std::vector<int64_t> ids;
  for (int job_idx = 0; job_idx < 25; ++job_idx) {
    ids.push_back(job_insert(*conn_, make_job(job_idx % 2 ? "train_sft" : "generate")).job.id);
  }
  std::vector<int64_t> seen;
  JobFilter filter;
  filter.limit = 10;
  for (int page_idx = 0; page_idx < 5; ++page_idx) {
    auto page = job_list(*conn_, filter);
    if (page.empty()) break;
    for (const auto& job : page) seen.push_back(job.id);
    filter.after_id = page.back().id;
    // A new job inserted while paging does not shift later pages.
    job_insert(*conn_, make_job("evaluate"));
  }
  std::vector<int64_t> expected(ids.rbegin(), ids.rend());
  EXPECT_EQ(seen, expected);

  JobFilter by_kind;
  by_kind.kind = "train_sft";
  by_kind.limit = 100;
  auto sft = job_list(*conn_, by_kind);
  EXPECT_EQ(sft.size(), 12u);
  for (const auto& job : sft) EXPECT_EQ(job.kind, "train_sft");

  ASSERT_EQ(job_cancel(*conn_, ids[3]), CancelResult::cancelled);
  JobFilter by_state;
  by_state.state = JobState::cancelled;
  auto cancelled = job_list(*conn_, by_state);
  ASSERT_EQ(cancelled.size(), 1u);
  EXPECT_EQ(cancelled[0].id, ids[3]);

  JobFilter bad;
  bad.limit = 0;
  EXPECT_THROW(job_list(*conn_, bad), std::invalid_argument);
}

TEST_F(QueueTest, CancelWaitingRunningFinishedAndMissing) {
  auto waiting = job_insert(*conn_, make_job("generate")).job;
  EXPECT_EQ(job_cancel(*conn_, waiting.id), CancelResult::cancelled);
  auto after = job_get(*conn_, waiting.id);
  EXPECT_EQ(after->state, JobState::cancelled);
  EXPECT_NE(after->finished_at, "");
  EXPECT_EQ(job_cancel(*conn_, waiting.id), CancelResult::already_finished);
  EXPECT_EQ(job_cancel(*conn_, waiting.id + 999), CancelResult::not_found);

  auto running = job_insert(*conn_, make_job("generate")).job;
  ClaimRequest claim;
  claim.worker_id = 7;
  auto claimed = job_claim(*conn_, claim);
  ASSERT_EQ(claimed.size(), 1u);
  ASSERT_EQ(claimed[0].id, running.id);

  auto listener = connect(database_->url());
  pqxx::nontransaction(*listener).exec(std::string("LISTEN ") + kJobCancelChannel);
  EXPECT_EQ(job_cancel(*conn_, running.id), CancelResult::cancel_requested);
  auto now_running = job_get(*conn_, running.id);
  EXPECT_EQ(now_running->state, JobState::running) << "a running job stops cooperatively";
  EXPECT_TRUE(now_running->cancel_requested);

  // The worker hears about it on the cancel channel, with the id as payload.
  struct Receiver : pqxx::notification_receiver {
    Receiver(pqxx::connection& c) : pqxx::notification_receiver(c, kJobCancelChannel) {}
    void operator()(const std::string& payload, int) override { payloads.push_back(payload); }
    std::vector<std::string> payloads;
  } receiver(*listener);
  listener->await_notification(2, 0);
  ASSERT_EQ(receiver.payloads.size(), 1u);
  EXPECT_EQ(receiver.payloads[0], std::to_string(running.id));

  auto beat = job_heartbeat(*conn_, job_lease(claimed[0]), 30);
  EXPECT_TRUE(beat.lease_held);
  EXPECT_TRUE(beat.cancel_requested);
  EXPECT_TRUE(job_cancelled(*conn_, job_lease(claimed[0])));
  auto done = job_get(*conn_, running.id);
  EXPECT_EQ(done->state, JobState::cancelled);
  EXPECT_NE(done->finished_at, "");
}

TEST_F(QueueTest, InsertNotifiesTheQueueOnCommit) {
  auto listener = connect(database_->url());
  pqxx::nontransaction(*listener).exec(std::string("LISTEN ") + kJobsChannel);
  struct Receiver : pqxx::notification_receiver {
    Receiver(pqxx::connection& c) : pqxx::notification_receiver(c, kJobsChannel) {}
    void operator()(const std::string& payload, int) override { payloads.push_back(payload); }
    std::vector<std::string> payloads;
  } receiver(*listener);

  {
    // Nothing is announced for a transaction that rolls back.
    pqxx::work txn(*conn_);
    job_insert(txn, make_job("generate"));
  }
  EXPECT_EQ(listener->await_notification(0, 300000), 0);
  EXPECT_TRUE(receiver.payloads.empty());

  JobInsert gpu = make_job("train_sft");
  gpu.queue = "gpu";
  job_insert(*conn_, gpu);
  listener->await_notification(2, 0);
  ASSERT_EQ(receiver.payloads.size(), 1u);
  EXPECT_EQ(receiver.payloads[0], "gpu");
}

TEST_F(QueueTest, PausedQueueIsNotClaimedUntilResumed) {
  auto job = job_insert(*conn_, make_job("generate")).job;
  queue_pause(*conn_, "default");
  EXPECT_TRUE(queue_is_paused(*conn_, "default"));
  ClaimRequest claim;
  claim.worker_id = 1;
  EXPECT_TRUE(job_claim(*conn_, claim).empty());
  queue_resume(*conn_, "default");
  EXPECT_FALSE(queue_is_paused(*conn_, "default"));
  auto claimed = job_claim(*conn_, claim);
  ASSERT_EQ(claimed.size(), 1u);
  EXPECT_EQ(claimed[0].id, job.id);
}

TEST_F(QueueTest, PruneDeletesOnlyOldFinishedJobs) {
  auto old_done = job_insert(*conn_, make_job("generate")).job;
  auto new_done = job_insert(*conn_, make_job("generate")).job;
  auto pending = job_insert(*conn_, make_job("generate")).job;
  job_cancel(*conn_, old_done.id);
  job_cancel(*conn_, new_done.id);
  scalar("UPDATE jobs SET finished_at = now() - interval '2 days', created_at = now() - interval '3 days' "
         "WHERE id = " + std::to_string(old_done.id) + " RETURNING id");
  EXPECT_EQ(job_prune(*conn_, 86400), 1);
  EXPECT_FALSE(job_get(*conn_, old_done.id));
  EXPECT_TRUE(job_get(*conn_, new_done.id));
  EXPECT_TRUE(job_get(*conn_, pending.id));
  EXPECT_EQ(job_prune(*conn_, 86400), 0);
}

TEST_F(QueueTest, SchemaRefusesBrokenInvariants) {
  auto job = job_insert(*conn_, make_job("generate")).job;
  std::string id = std::to_string(job.id);
  auto refused = [this](const std::string& statement) {
    try {
      pqxx::work txn(*conn_);
      txn.exec(statement);
      txn.commit();
      return false;
    } catch (const pqxx::check_violation&) {
      return true;
    }
  };
  EXPECT_TRUE(refused("UPDATE jobs SET state = 'completed' WHERE id = " + id)) << "terminal without finished_at";
  EXPECT_TRUE(refused("UPDATE jobs SET finished_at = now() WHERE id = " + id)) << "finished_at while available";
  EXPECT_TRUE(refused("UPDATE jobs SET attempt = 4 WHERE id = " + id)) << "attempt > max_attempts";
  EXPECT_TRUE(refused("UPDATE jobs SET state = 'running' WHERE id = " + id)) << "running without a lease";
  EXPECT_TRUE(refused("UPDATE jobs SET state = 'done' WHERE id = " + id)) << "unknown state";
}

TEST_F(QueueTest, WorkersClaimOnlyJobsTheirCapabilitiesCover) {
  JobInsert triton = make_job("generate");
  triton.required_tags = {"target:triton", "device:gpu"};
  JobInsert cpu_opencl = make_job("generate");
  cpu_opencl.required_tags = {"target:opencl", "device:cpu"};
  JobInsert anywhere = make_job("generate");
  int64_t triton_id = job_insert(*conn_, triton).job.id;
  int64_t cpu_id = job_insert(*conn_, cpu_opencl).job.id;
  int64_t any_id = job_insert(*conn_, anywhere).job.id;
  EXPECT_EQ(job_get(*conn_, triton_id)->required_tags, (std::vector<std::string>{"target:triton", "device:gpu"}));

  ClaimRequest cpu_worker;
  cpu_worker.worker_id = 1;
  cpu_worker.limit = 10;
  cpu_worker.capabilities = {"target:opencl", "device:cpu"};
  std::set<int64_t> claimed;
  for (const auto& job : job_claim(*conn_, cpu_worker)) claimed.insert(job.id);
  EXPECT_EQ(claimed, (std::set<int64_t>{cpu_id, any_id})) << "a CPU worker never claims a triton job";
  EXPECT_FALSE(job_next_due(*conn_, "default", {}, cpu_worker.capabilities)) << "nothing left that it could run";
  ASSERT_TRUE(job_next_due(*conn_, "default", {}, {"target:triton", "device:gpu"}));

  ClaimRequest gpu_worker = cpu_worker;
  gpu_worker.worker_id = 2;
  gpu_worker.capabilities = {"target:opencl", "target:cuda", "target:triton", "device:gpu"};
  auto jobs = job_claim(*conn_, gpu_worker);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].id, triton_id);
}

TEST_F(QueueTest, CapabilityTagsAreValidated) {
  JobInsert bad = make_job("generate");
  bad.required_tags = {"target:'; DROP TABLE jobs; --"};
  EXPECT_THROW(job_insert(*conn_, bad), std::invalid_argument);
  EXPECT_EQ(parse_text_array("{target:opencl,device:cpu}"), (std::vector<std::string>{"target:opencl", "device:cpu"}));
  EXPECT_TRUE(parse_text_array("{}").empty());
}

TEST_F(QueueTest, SilentWorkersAreMarkedDeadAndTheirJobsCleared) {
  WorkerInfo info{"host", 1, "cpu", "test", 1, {}};
  int64_t silent = worker_register(*conn_, info);
  int64_t alive = worker_register(*conn_, info);
  scalar("UPDATE workers SET state = 'busy', running_job_ids = '{5,6}', heartbeat_at = now() - interval '2 minutes' "
         "WHERE id = " + std::to_string(silent) + " RETURNING id");
  worker_stop(*conn_, alive);
  scalar("UPDATE workers SET heartbeat_at = now() - interval '2 minutes' WHERE id = " + std::to_string(alive) +
         " RETURNING id");
  EXPECT_EQ(worker_mark_dead(*conn_, 60), 1) << "a stopped worker is not dead";
  EXPECT_EQ(scalar("SELECT state || ':' || cardinality(running_job_ids) FROM workers WHERE id = " +
                   std::to_string(silent)), "dead:0");
  EXPECT_EQ(worker_mark_dead(*conn_, 60), 0) << "once";
  worker_heartbeat(*conn_, silent, "idle");
  EXPECT_EQ(scalar("SELECT state FROM workers WHERE id = " + std::to_string(silent)), "idle") << "back from the dead";
}
