// The harness result cache on a real PostgreSQL (check_results, migration 004): two
// Checkers (two jobs) share it, so the second checks nothing; outcomes that may be the
// machine's fault are not stored; options that change a verdict change the key.
// Run: scripts/test.sh build -R jobs_result_store_db_test (needs KFORGE_TEST_DATABASE_URL).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "db/check_results.h"
#include "db/connection.h"
#include "tests/support/test_db.h"
#include "tests/worker/harness/harness_fixtures.h"
#include "worker/jobs/result_store_db.h"

using namespace kforge::harness;
using namespace kforge::harness::testing;
using kforge::jobs::make_db_result_store;

namespace {

// Every element off by 0.5: a wrong_output with a mismatch record.
const char* kOffByHalf = R"(// kforge-launch: silu_mul grid=cdiv(numel(x),256) block=256 args=x,y,out,numel(x)
__kernel void silu_mul(__global const float* x, __global const float* y, __global float* out, int n) {
  int i = get_global_id(0);
  if (i < n) { float v = x[i]; out[i] = v / (1.0f + exp(-v)) * y[i] + 0.5f; }
}
)";

const char* kEndless = R"(// kforge-launch: silu_mul grid=1 block=1 args=x,y,out,numel(x)
__kernel void silu_mul(__global const float* x, __global const float* y, __global float* out, int n) {
  volatile int spin = 1;
  while (spin) { }
}
)";

class ResultStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!kforge::test::test_cluster_url()) GTEST_SKIP() << "KFORGE_TEST_DATABASE_URL is not set (run through `make test`)";
    if (list_devices().empty()) GTEST_SKIP() << "no OpenCL device on this host (install pocl-opencl-icd)";
    database_ = std::make_unique<kforge::test::TestDatabase>();
    conn_ = kforge::db::connect(database_->url());
    options_ = fast_options();
    options_.result_store = make_db_result_store(*conn_);
  }

  std::unique_ptr<Checker> checker(const CheckOptions& options) {
    std::string error;
    auto made = Checker::create(silu_mul_op(), options, error);
    EXPECT_TRUE(made) << error;
    return made;
  }

  std::unique_ptr<kforge::test::TestDatabase> database_;
  std::unique_ptr<pqxx::connection> conn_;
  CheckOptions options_;
};

}  // namespace

TEST_F(ResultStoreTest, SecondJobGetsTheStoredResultWithoutChecking) {
  options_.time = true;
  options_.time_budget_s = 0.1;
  auto first = checker(options_)->check(kSiluMulKernel);
  ASSERT_EQ(first.outcome, Outcome::correct) << first.message;
  EXPECT_FALSE(first.cached);
  ASSERT_TRUE(first.kernel);

  std::string key = result_store_key(first, options_);
  auto row = kforge::db::check_result_get(*conn_, key);
  ASSERT_TRUE(row) << "the correct result was stored under " << key;
  EXPECT_EQ(row->outcome, "correct");
  EXPECT_EQ(row->program_sha256, first.program_hash);
  EXPECT_EQ(row->device, first.environment.device);
  EXPECT_EQ(row->hits, 0);

  // Another Checker (another job): served from the table, nothing compiled or run.
  auto second = checker(options_)->check(kSiluMulKernel);
  EXPECT_TRUE(second.cached);
  EXPECT_EQ(second.outcome, Outcome::correct);
  EXPECT_EQ(second.compile_ms, 0);
  EXPECT_EQ(second.run_ms, 0);
  ASSERT_TRUE(second.kernel && second.baseline);
  EXPECT_DOUBLE_EQ(second.kernel->median_ms, first.kernel->median_ms);
  EXPECT_DOUBLE_EQ(second.speedup, first.speedup);
  EXPECT_EQ(second.trials_passed, first.trials_passed);
  EXPECT_EQ(kforge::db::check_result_get(*conn_, key)->hits, 1);
}

TEST_F(ResultStoreTest, WrongOutputIsStoredWithItsMismatch) {
  auto first = checker(options_)->check(kOffByHalf);
  ASSERT_EQ(first.outcome, Outcome::wrong_output) << first.message;
  auto second = checker(options_)->check(kOffByHalf);
  EXPECT_TRUE(second.cached);
  EXPECT_EQ(second.outcome, Outcome::wrong_output);
  EXPECT_EQ(second.message, first.message);
  ASSERT_TRUE(second.mismatch && first.mismatch);
  EXPECT_EQ(second.mismatch->index, first.mismatch->index);
  EXPECT_DOUBLE_EQ(second.mismatch->expected, first.mismatch->expected);
  EXPECT_EQ(second.mismatch->bad_count, first.mismatch->bad_count);
}

TEST_F(ResultStoreTest, TimeoutsAreNotStored) {
  options_.trial_timeout_s = 1;
  auto first = checker(options_)->check(kEndless);
  ASSERT_EQ(first.outcome, Outcome::timeout) << first.message;
  EXPECT_FALSE(kforge::db::check_result_get(*conn_, result_store_key(first, options_)))
      << "a timeout can be the machine's fault: it must be checked again next time";
}

TEST_F(ResultStoreTest, OptionsThatChangeTheVerdictChangeTheKey) {
  auto untimed = checker(options_)->check(kSiluMulKernel);
  ASSERT_EQ(untimed.outcome, Outcome::correct) << untimed.message;
  CheckOptions timed = options_;
  timed.time = true;
  timed.time_budget_s = 0.1;
  auto with_timing = checker(timed)->check(kSiluMulKernel);
  EXPECT_FALSE(with_timing.cached) << "an untimed result must not answer a request for timings";
  EXPECT_TRUE(with_timing.kernel);
  EXPECT_NE(result_store_key(untimed, options_), result_store_key(with_timing, timed));
  CheckOptions fewer_trials = options_;
  fewer_trials.trials = 1;
  EXPECT_FALSE(checker(fewer_trials)->check(kSiluMulKernel).cached);
}

TEST_F(ResultStoreTest, DatabaseErrorsAreMissesNotFailures) {
  auto broken = kforge::db::connect(database_->url());
  CheckOptions options = options_;
  options.result_store = make_db_result_store(*broken);
  {
    pqxx::work txn(*conn_);
    txn.exec0("DROP TABLE check_results");
    txn.commit();
  }
  auto result = checker(options)->check(kSiluMulKernel);
  EXPECT_EQ(result.outcome, Outcome::correct) << result.message;
  EXPECT_FALSE(result.cached);
}

TEST(CheckResultJson, RoundTripsEveryField) {
  CheckResult result;
  result.outcome = Outcome::wrong_output;
  result.message = "trial 1: out[3] expected 1, got nan";
  Mismatch mismatch;
  mismatch.trial = "trial 1 of 5";
  mismatch.index = 3;
  mismatch.expected = 1;
  mismatch.actual = std::nan("");
  mismatch.bad_count = 7;
  mismatch.numel = 100;
  result.mismatch = mismatch;
  TimingStats stats;
  stats.median_ms = 2.5;
  stats.attempts = 2;
  stats.others_cores = 0.75;
  stats.disturbed = true;
  result.kernel = stats;
  result.program_hash = std::string(64, 'a');
  result.cache_key = "op:" + result.program_hash + ":dev";
  result.environment.device = "pthread";
  result.environment.blas = "OpenBLAS 0.3.21 (2 threads)";
  result.spare_wait_ms = 1.5;
  auto back = CheckResult::from_json(result.to_json());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->outcome, Outcome::wrong_output);
  EXPECT_EQ(back->message, result.message);
  ASSERT_TRUE(back->mismatch);
  EXPECT_EQ(back->mismatch->index, 3);
  EXPECT_TRUE(std::isnan(back->mismatch->actual));
  EXPECT_EQ(back->mismatch->bad_count, 7);
  ASSERT_TRUE(back->kernel);
  EXPECT_DOUBLE_EQ(back->kernel->median_ms, 2.5);
  EXPECT_EQ(back->kernel->attempts, 2);
  EXPECT_TRUE(back->kernel->disturbed);
  EXPECT_FALSE(back->baseline);
  EXPECT_EQ(back->cache_key, result.cache_key);
  EXPECT_EQ(back->environment.device, "pthread");
  EXPECT_EQ(back->environment.blas, result.environment.blas);
  EXPECT_DOUBLE_EQ(back->spare_wait_ms, 1.5);
  EXPECT_FALSE(CheckResult::from_json("not json"));
  EXPECT_FALSE(CheckResult::from_json(R"({"outcome":"excellent"})"));
}
