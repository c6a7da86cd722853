// The built-in op suite as training/evaluation tasks: loads suite/level*/*.json,
// filters by split, renders prompts, and checks completions with the real harness
// (a pool of harness::Checker per op, so samples are checked in parallel).
// Tested by ctest -R train_harness_test.
#pragma once

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "worker/harness/checker.h"
#include "spec/op_spec.h"
#include "worker/harness/probe.h"
#include "worker/train/prompt_template.h"
#include "worker/train/trainable_policy.h"

namespace kforge::train {

//! One suite op.
struct SuiteOp {
  spec::OpSpec spec;  //!< the op, parsed
  std::string split;     //!< "train" or "heldout"
  int level = 1;         //!< 1 or 2
  std::string category;  //!< e.g. "elementwise"
  std::string spec_json; //!< the op JSON without the suite fields (what the harness parses)
};

//! Reads every suite/level*/*.json under `suite_dir`, sorted by name; `split` "" keeps all.
//! Throws std::runtime_error naming the file on a bad op.
std::vector<SuiteOp> load_suite(const std::string& suite_dir, const std::string& split = "");

//! The prompt fields of an op for `target`.
PromptOp prompt_op(const spec::OpSpec& spec, const std::string& target = "opencl");

//! Tasks (id = op name, prompt rendered in `style`, spec = op JSON) for the given ops.
std::vector<Task> suite_tasks(const std::vector<SuiteOp>& ops, PromptStyle style, const std::string& target = "opencl");

//! The op with its main shapes scaled down (consistently, via harness::probe_shapes) so
//! all inputs together hold at most `max_elements`; extra shapes are kept. 0 = unchanged.
//! For cheap correctness checks on CPU: speedups measured on a shrunk op are not the op's.
spec::OpSpec shrink_for_checking(const spec::OpSpec& spec, int64_t max_elements);

//! Maps a harness result onto what the reward needs.
CheckSummary summarize_check(const harness::CheckResult& result);

//! Checker backed by the kernel harness. Thread-safe: each concurrent check of an op
//! gets its own harness::Checker (reference outputs computed once per instance). Between
//! checks at most `max_idle` of them are kept, the most recently used, for the next check
//! of their op; older ones are closed. Each holds its op's reference outputs and arena and
//! a started sandbox child: kept for every op (a 29-op evaluation, a curriculum of 300
//! tasks) they grew without bound (2026-11-28: 40 children and 11 GB, killed by the OOM
//! killer on the 24 GiB CPU machine).
class HarnessChecker : public Checker {
 public:
  //! `max_check_elements` > 0 checks on shrunk main shapes (see shrink_for_checking).
  //! `max_idle`: checkers kept between checks (callers pass twice their check threads).
  explicit HarnessChecker(const harness::CheckOptions& options, int64_t max_check_elements = 0,
                          size_t max_idle = kDefaultMaxIdle);
  static constexpr size_t kDefaultMaxIdle = 8;
  //! The max_idle for `threads` checks at once: two per thread.
  static size_t idle_for(int threads) { return static_cast<size_t>(2 * (threads > 0 ? threads : 1)); }
  //! Checkers kept between checks now (at most max_idle).
  size_t idle_count();
  ~HarnessChecker() override;
  //! Parses task.spec (op JSON) and checks the completion; throws std::runtime_error if the op itself is broken.
  CheckSummary check(const Task& task, const std::string& completion) override;
  //! A fresh harness::Checker with `secret_seed`, no cache and no timing (a correctness re-check).
  CheckSummary recheck(const Task& task, const std::string& completion, uint64_t secret_seed) override;
  //! Full harness result (the same path as check).
  harness::CheckResult check_full(const Task& task, const std::string& completion);

 private:
  std::unique_ptr<harness::Checker> acquire(const Task& task);
  void release(const std::string& op, std::unique_ptr<harness::Checker> checker);
  harness::CheckOptions options_;
  int64_t max_check_elements_ = 0;
  size_t max_idle_ = kDefaultMaxIdle;
  std::mutex mutex_;
  //! Idle checkers by op, least recently released first.
  std::list<std::pair<std::string, std::unique_ptr<harness::Checker>>> idle_;
};

}  // namespace kforge::train
