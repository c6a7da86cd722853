// The API's storage wrappers on a real database: tokens (hash lookup, revoke),
// Idempotency-Key records (24 h window, expiry), ops and candidates (best per
// job ignores flagged), model versions (newest by name), prepared statements
// surviving many calls. Run: scripts/test.sh build -R db_api_store
#include <gtest/gtest.h>

#include "db/connection.h"
#include "db/leaderboards.h"
#include "db/models.h"
#include "db/ops.h"
#include "db/tokens.h"
#include "tests/support/test_db.h"

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
  kforge::db::OpRecord op;
  op.name = "relu";
  op.source = "def forward(x: Tensor) -> Tensor:\n    return torch.relu(x)\n";
  op.spec_json = R"({"name": "relu"})";
  op.spec_sha256 = "abc";
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
