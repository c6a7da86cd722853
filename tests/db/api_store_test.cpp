// The API's storage wrappers on a real database: tokens (hash lookup, revoke),
// Idempotency-Key records (24 h window, expiry), ops and candidates (best per
// job ignores flagged), model versions (newest by name), prepared statements
// surviving many calls; candidates once per attempt under the job's lease, idempotency
// records bound to jobs, deleted ops and archived models (issue 18).
// Run: scripts/test.sh build -R db_api_store
#include <gtest/gtest.h>

#include "db/connection.h"
#include "db/leaderboards.h"
#include "db/models.h"
#include "db/ops.h"
#include "db/queue.h"
#include "db/tokens.h"
#include "tests/support/test_db.h"

namespace {

kforge::db::OpRecord relu_op() {
  kforge::db::OpRecord op;
  op.name = "relu";
  op.source = "def forward(x: Tensor) -> Tensor:\n    return torch.relu(x)\n";
  op.spec_json = R"({"name": "relu"})";
  op.spec_sha256 = "abc";
  return op;
}

}  // namespace

TEST(ApiStore, TokensAndIdempotencyRecords) {
  KFORGE_REQUIRE_DB();
  kforge::test::TestDatabase database;
  auto conn = kforge::db::connect(database.url());
  auto token = kforge::db::token_insert(*conn, "ci", std::string(64, 'a'), "kf_aaaaa", {"submit", "admin"});
  auto found = kforge::db::token_find(*conn, std::string(64, 'a'));
  ASSERT_TRUE(found);
  EXPECT_EQ(found->id, token.id);
  EXPECT_EQ(found->scopes, (std::vector<std::string>{"submit", "admin"}));
  EXPECT_FALSE(kforge::db::token_find(*conn, std::string(64, 'b')));
  EXPECT_TRUE(kforge::db::token_revoke(*conn, token.id));
  EXPECT_FALSE(kforge::db::token_find(*conn, std::string(64, 'a'))) << "revoked tokens do not authenticate";
  EXPECT_THROW(kforge::db::token_insert(*conn, "", "x", "p", {"root"}), pqxx::check_violation);

  kforge::db::idempotency_store(*conn, "token:1", "POST", "/v1/ops", "k", {"hash1", 201, "application/json", "{}"});
  // A second store for a fresh key keeps the first response.
  kforge::db::idempotency_store(*conn, "token:1", "POST", "/v1/ops", "k", {"hash2", 422, "x", "y"});
  auto record = kforge::db::idempotency_find(*conn, "token:1", "POST", "/v1/ops", "k");
  ASSERT_TRUE(record);
  EXPECT_EQ(record->request_sha256, "hash1");
  EXPECT_EQ(record->status, 201);
  EXPECT_FALSE(kforge::db::idempotency_find(*conn, "token:2", "POST", "/v1/ops", "k")) << "per caller";
  {
    pqxx::work txn(*conn);
    txn.exec("UPDATE idempotency_records SET created_at = now() - interval '25 hours'");
    txn.commit();
  }
  EXPECT_FALSE(kforge::db::idempotency_find(*conn, "token:1", "POST", "/v1/ops", "k")) << "older than 24 h";
  EXPECT_EQ(kforge::db::idempotency_expire(*conn), 1);
  EXPECT_EQ(kforge::db::idempotency_expire(*conn), 0);
}

TEST(ApiStore, OpsCandidatesModelsAndPreparedLeaderboard) {
  KFORGE_REQUIRE_DB();
  kforge::test::TestDatabase database;
  auto conn = kforge::db::connect(database.url());
  kforge::db::OpRecord op = relu_op();
  auto stored = kforge::db::op_insert(*conn, op);
  EXPECT_GT(stored.id, 0);
  EXPECT_EQ(kforge::db::op_find_by_sha256(*conn, "abc")->id, stored.id);
  EXPECT_FALSE(kforge::db::op_get(*conn, stored.id + 1));

  auto add = [&](const std::string& outcome, std::optional<double> speedup, bool flagged) {
    kforge::db::CandidateRecord c;
    c.job_id = 7;
    c.op_id = stored.id;
    c.source = "k";
    c.outcome = outcome;
    c.speedup = speedup;
    c.flagged = flagged;
    return kforge::db::candidate_insert(*conn, c);
  };
  add("timeout", std::nullopt, false);
  int64_t best = add("correct", 3.0, false);
  add("correct", 9.0, true);
  EXPECT_EQ(kforge::db::candidate_best_for_job(*conn, 7)->id, best) << "flagged speedups are not best";
  EXPECT_EQ(kforge::db::candidate_list_for_job(*conn, 7, 0, 2).size(), 2u);
  kforge::db::CandidateRecord bad;
  bad.job_id = 7;
  bad.op_id = stored.id;
  bad.source = "k";
  bad.outcome = "great";
  EXPECT_THROW(kforge::db::candidate_insert(*conn, bad), pqxx::check_violation);

  kforge::db::ModelRecord model;
  model.name = "kforge-tiny";
  auto v1 = kforge::db::model_insert(*conn, model);
  model.version = 2;
  model.parent_id = v1.id;
  auto v2 = kforge::db::model_insert(*conn, model);
  EXPECT_EQ(kforge::db::model_find(*conn, "kforge-tiny", 0)->id, v2.id) << "newest version by default";
  EXPECT_EQ(kforge::db::model_find(*conn, "kforge-tiny", 1)->id, v1.id);
  EXPECT_THROW(kforge::db::model_insert(*conn, model), pqxx::unique_violation);

  // The prepared leaderboard statement is reused across calls on one connection.
  for (int call_idx = 0; call_idx < 3; ++call_idx) {
    auto rows = kforge::db::leaderboard_ops(*conn, 0, "", "", {}, 10);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_DOUBLE_EQ(*rows[0].speedup, 3.0);
  }
}

// Issue 18: a running job's candidates are keyed by (job, attempt, sample) and written only
// under its lease; a new attempt clears the earlier one's. Idempotency records bind to jobs.
TEST(ApiStore, CandidatesOncePerAttemptUnderTheLease) {
  KFORGE_REQUIRE_DB();
  kforge::test::TestDatabase database;
  auto conn = kforge::db::connect(database.url());
  kforge::db::OpRecord op = relu_op();
  int64_t op_id = kforge::db::op_insert(*conn, op).id;
  kforge::db::JobInsert insert;
  insert.kind = "generate";
  int64_t job_id = kforge::db::job_insert(*conn, insert).job.id;
  kforge::db::ClaimRequest claim;
  claim.worker_id = 1;
  auto claimed = kforge::db::job_claim(*conn, claim);
  ASSERT_EQ(claimed.size(), 1u);
  auto first = kforge::db::job_lease(claimed[0]);
  auto candidate = [&](int sample_idx) {
    kforge::db::CandidateRecord c;
    c.job_id = job_id;
    c.op_id = op_id;
    c.sample_idx = sample_idx;
    c.source = "k" + std::to_string(sample_idx);
    c.outcome = "correct";
    c.speedup = 1.0 + sample_idx;
    return c;
  };
  auto count = [&] { return kforge::db::candidate_list_for_job(*conn, job_id, 0, 100).size(); };
  ASSERT_TRUE(kforge::db::candidate_begin_attempt(*conn, first));
  auto a = kforge::db::candidate_write(*conn, first, candidate(0));
  ASSERT_TRUE(a);
  EXPECT_EQ(kforge::db::candidate_write(*conn, first, candidate(0)), a) << "a repeated write is the same row";
  EXPECT_TRUE(kforge::db::candidate_write(*conn, first, candidate(1)));
  EXPECT_EQ(count(), 2u);

  // The lease lapses and the job is rescued: the old attempt can no longer write or clear.
  {
    pqxx::work txn(*conn);
    txn.exec_params("UPDATE jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1", job_id);
    txn.commit();
  }
  EXPECT_EQ(kforge::db::job_rescue(*conn).retried, 1);
  EXPECT_FALSE(kforge::db::candidate_write(*conn, first, candidate(2))) << "lease lost: nothing written";
  EXPECT_FALSE(kforge::db::candidate_begin_attempt(*conn, first));
  EXPECT_EQ(count(), 2u);
  {
    pqxx::work txn(*conn);
    txn.exec_params("UPDATE jobs SET scheduled_at = now() WHERE id = $1", job_id);
    txn.commit();
  }
  claimed = kforge::db::job_claim(*conn, claim);
  ASSERT_EQ(claimed.size(), 1u);
  auto second = kforge::db::job_lease(claimed[0]);
  EXPECT_EQ(second.attempt, 2);
  ASSERT_TRUE(kforge::db::candidate_begin_attempt(*conn, second));
  EXPECT_EQ(count(), 0u) << "the new attempt starts from no candidates";
  auto again = kforge::db::candidate_write(*conn, second, candidate(0));
  ASSERT_TRUE(again);
  EXPECT_NE(again, a);
  EXPECT_EQ(count(), 1u);
  EXPECT_EQ(kforge::db::candidate_best_for_job(*conn, job_id)->id, *again);

  // Idempotency: the key is bound in the job's transaction; the response is stored after.
  {
    pqxx::work txn(*conn);
    EXPECT_TRUE(kforge::db::idempotency_bind(txn, "token:1", "POST", "/v1/generations", "k", "hash1", job_id));
    EXPECT_FALSE(kforge::db::idempotency_bind(txn, "token:1", "POST", "/v1/generations", "k", "hash2", job_id + 1))
        << "a fresh record keeps its key";
    txn.commit();
  }
  auto pending = kforge::db::idempotency_find(*conn, "token:1", "POST", "/v1/generations", "k");
  ASSERT_TRUE(pending);
  EXPECT_EQ(pending->status, 0);
  EXPECT_EQ(pending->job_id, job_id);
  kforge::db::idempotency_store(*conn, "token:1", "POST", "/v1/generations", "k", {"other", 202, "application/json", "{}"});
  EXPECT_EQ(kforge::db::idempotency_find(*conn, "token:1", "POST", "/v1/generations", "k")->status, 0)
      << "another body cannot complete the record";
  kforge::db::idempotency_store(*conn, "token:1", "POST", "/v1/generations", "k", {"hash1", 202, "application/json", "{}"});
  auto stored = kforge::db::idempotency_find(*conn, "token:1", "POST", "/v1/generations", "k");
  EXPECT_EQ(stored->status, 202);
  EXPECT_EQ(stored->job_id, job_id);
  EXPECT_TRUE(kforge::db::idempotency_try_lock(*conn, 42));
  auto other = kforge::db::connect(database.url());
  EXPECT_FALSE(kforge::db::idempotency_try_lock(*other, 42)) << "one request per key at a time";
  kforge::db::idempotency_unlock(*conn, 42);
  EXPECT_TRUE(kforge::db::idempotency_try_lock(*other, 42));
}

TEST(ApiStore, DeleteOpsAndArchiveModels) {
  KFORGE_REQUIRE_DB();
  kforge::test::TestDatabase database;
  auto conn = kforge::db::connect(database.url());
  kforge::db::OpRecord op = relu_op();
  int64_t op_id = kforge::db::op_insert(*conn, op).id;
  kforge::db::CandidateRecord c;
  c.job_id = 1;
  c.op_id = op_id;
  c.source = "k";
  c.outcome = "correct";
  c.speedup = 2;
  kforge::db::candidate_insert(*conn, c);
  kforge::db::JobInsert insert;
  insert.kind = "generate";
  insert.args_json = "{\"op_id\": " + std::to_string(op_id) + "}";
  int64_t job_id = kforge::db::job_insert(*conn, insert).job.id;
  EXPECT_EQ(kforge::db::op_delete(*conn, op_id).in_flight, 1) << "a queued generation keeps the op";
  EXPECT_TRUE(kforge::db::op_get(*conn, op_id));
  kforge::db::job_cancel(*conn, job_id);
  auto deleted = kforge::db::op_delete(*conn, op_id);
  EXPECT_TRUE(deleted.found);
  EXPECT_EQ(deleted.candidates_deleted, 1);
  EXPECT_FALSE(kforge::db::op_get(*conn, op_id));
  EXPECT_TRUE(kforge::db::leaderboard_ops(*conn, 0, "", "", {}, 10).empty());
  EXPECT_FALSE(kforge::db::op_delete(*conn, op_id).found);

  kforge::db::ModelRecord model;
  model.name = "m";
  auto v1 = kforge::db::model_insert(*conn, model);
  model.version = 2;
  auto v2 = kforge::db::model_insert(*conn, model);
  EXPECT_TRUE(kforge::db::model_archive(*conn, v2.id));
  EXPECT_EQ(kforge::db::model_find(*conn, "m", 0)->id, v1.id) << "the newest version not archived";
  EXPECT_FALSE(kforge::db::model_find(*conn, "m", 2)) << "an archived version is not resolved";
  EXPECT_EQ(kforge::db::model_find(*conn, "m", 0, /*include_archived=*/true)->version, 2) << "but numbering counts it";
  EXPECT_EQ(kforge::db::model_get(*conn, v2.id)->state, "archived");
  model.version = 3;
  model.state = "training";
  auto v3 = kforge::db::model_insert(*conn, model);
  EXPECT_FALSE(kforge::db::model_archive(*conn, v3.id)) << "not while training";
}
