// Reward of one checked kernel candidate (docs/training.md): 0 for
// format errors and rule violations, partial credit for compiling and running,
// 1 for correct plus a capped speed bonus. Tested by tests/worker/train/reward_test.cpp
// (ctest -R train_test).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "worker/harness/checker.h"

namespace kforge::train {

//! The harness's outcome ladder (worker/harness/checker.h): training counts and rewards
//! the same enum the checker returns; outcome_name comes with it.
using Outcome = harness::Outcome;
using harness::outcome_name;

//! Number of Outcome values (for histograms indexed by outcome).
constexpr int kOutcomeCount = 7;
static_assert(static_cast<int>(Outcome::correct) + 1 == kOutcomeCount, "kOutcomeCount must cover harness::Outcome");

//! Parses an outcome name ("wrong_output"); nullopt for an unknown name.
std::optional<Outcome> outcome_from_name(const std::string& name);

//! True when the candidate compiled (it got at least as far as running).
bool outcome_compiled(Outcome outcome);

//! What the reward needs to know about one checked candidate.
struct CheckSummary {
  Outcome outcome = Outcome::format_error;  //!< the harness outcome
  double speedup = 0.0;                     //!< eager time / kernel time, meaningful when correct
  bool suspicious = false;                  //!< speedup above the harness's sanity bound
  //! For a rule_violation: the harness ran it anyway and the output matched (reward hacking).
  bool output_matched = false;
  std::string message;  //!< the harness's one-line reason (what failed, or "correct")
  //! The op's reference output is near-constant: a constant kernel passes, so "correct" proves little.
  bool weak_test = false;
  double speedup_vs_compile = 0.0;  //!< torch.compile time / kernel time (0: no compile baseline)
};

//! Per-outcome credit and speed bonus; defaults follow DESIGN.md.
struct RewardConfig {
  double format_error = 0.0;    //!< no parseable program
  double rule_violation = 0.0;  //!< never credited, even when the output would be right
  double compile_error = 0.05;  //!< parsed and passed the rules, did not compile
  double runtime_error = 0.1;   //!< compiled, crashed
  double timeout = 0.1;         //!< compiled, ran too long
  double wrong_output = 0.2;    //!< compiled and ran, output mismatched
  double correct = 1.0;         //!< verified correct
  double weak_test_correct = 0.2;  //!< correct on a weak test (near-constant reference): no correctness credit
  double speed_weight = 0.5;    //!< w in w * min(speedup, cap)
  double speed_cap = 3.0;       //!< cap in w * min(speedup, cap)
  bool bonus_for_suspicious = false;  //!< give the speed bonus to flagged speedups (off: correct credit only)

  //! Empty when valid, else a message naming the bad field.
  std::string validate() const;
};

//! The scalar reward of one candidate.
double reward_for(const CheckSummary& check, const RewardConfig& config = {});

//! How the speed bonus is scored.
enum class SpeedBonus {
  absolute,       //!< every correct sample: w * min(speedup, cap) (reward_for)
  among_correct,  //!< within its group, among the correct trusted samples only:
                  //!< w * (m - min m) / (max m - min m), m = min(speedup, cap); 0 when they tie or stand alone
};

//! Rewards of consecutive groups of `group_size` checks. With among_correct a correct
//! sample's bonus ranks it against the other correct samples of its group, so the step from
//! wrong to correct is the same for every op (shrunk shapes and noisy timings no longer
//! scale it) and speed only orders kernels that are already right.
std::vector<double> group_rewards(const std::vector<CheckSummary>& checks, int group_size, const RewardConfig& config,
                                  SpeedBonus bonus);

}  // namespace kforge::train
