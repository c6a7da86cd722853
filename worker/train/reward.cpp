// Reward from a check outcome; see reward.h. Pure arithmetic, no libtorch.
// Tested by tests/worker/train/reward_test.cpp.
#include "worker/train/reward.h"

#include <algorithm>
#include <cmath>

namespace kforge::train {

std::optional<Outcome> outcome_from_name(const std::string& name) {
  for (int outcome_idx = 0; outcome_idx < kOutcomeCount; ++outcome_idx)
    if (name == outcome_name(static_cast<Outcome>(outcome_idx))) return static_cast<Outcome>(outcome_idx);
  return std::nullopt;
}

bool outcome_compiled(Outcome outcome) {
  return outcome == Outcome::runtime_error || outcome == Outcome::timeout || outcome == Outcome::wrong_output ||
         outcome == Outcome::correct;
}

std::string RewardConfig::validate() const {
  const std::pair<const char*, double> credits[] = {
      {"format_error", format_error},   {"rule_violation", rule_violation}, {"compile_error", compile_error},
      {"runtime_error", runtime_error}, {"timeout", timeout},               {"wrong_output", wrong_output},
      {"correct", correct},             {"speed_weight", speed_weight},     {"speed_cap", speed_cap},
      {"weak_test_correct", weak_test_correct}};
  for (const auto& [name, value] : credits)
    if (!std::isfinite(value)) return std::string("reward.") + name + " must be a finite number";
  if (speed_weight < 0) return "reward.speed_weight must be >= 0";
  if (speed_cap < 0) return "reward.speed_cap must be >= 0";
  return "";
}

double reward_for(const CheckSummary& check, const RewardConfig& config) {
  switch (check.outcome) {
    case Outcome::format_error: return config.format_error;
    case Outcome::rule_violation: return config.rule_violation;
    case Outcome::compile_error: return config.compile_error;
    case Outcome::runtime_error: return config.runtime_error;
    case Outcome::timeout: return config.timeout;
    case Outcome::wrong_output: return config.wrong_output;
    case Outcome::correct: break;
  }
  // A near-constant reference lets a constant output pass: no credit beyond "it ran".
  if (check.weak_test) return config.weak_test_correct;
  double reward = config.correct;
  // A flagged speedup is not trusted: correctness counts, the bonus waits for review.
  bool bonus_allowed = !check.suspicious || config.bonus_for_suspicious;
  if (bonus_allowed && std::isfinite(check.speedup) && check.speedup > 0)
    reward += config.speed_weight * std::min(check.speedup, config.speed_cap);
  return reward;
}

std::vector<double> group_rewards(const std::vector<CheckSummary>& checks, int group_size, const RewardConfig& config,
                                  SpeedBonus bonus) {
  if (bonus == SpeedBonus::absolute || group_size < 1) {
    std::vector<double> rewards;
    for (const auto& check : checks) rewards.push_back(reward_for(check, config));
    return rewards;
  }
  RewardConfig no_bonus = config;
  no_bonus.speed_weight = 0;
  std::vector<double> rewards;
  for (const auto& check : checks) rewards.push_back(reward_for(check, no_bonus));
  auto trusted = [&](const CheckSummary& check) {
    return check.outcome == Outcome::correct && !check.weak_test && (!check.suspicious || config.bonus_for_suspicious) &&
           std::isfinite(check.speedup) && check.speedup > 0;
  };
  for (size_t group_start = 0; group_start < checks.size(); group_start += group_size) {
    size_t group_end = std::min(checks.size(), group_start + group_size);
    double lo = INFINITY, hi = -INFINITY;
    for (size_t idx = group_start; idx < group_end; ++idx) {
      if (!trusted(checks[idx])) continue;
      double m = std::min(checks[idx].speedup, config.speed_cap);
      lo = std::min(lo, m);
      hi = std::max(hi, m);
    }
    if (!(hi > lo)) continue;  // fewer than two distinct speeds: nothing to rank
    for (size_t idx = group_start; idx < group_end; ++idx)
      if (trusted(checks[idx]))
        rewards[idx] += config.speed_weight * (std::min(checks[idx].speedup, config.speed_cap) - lo) / (hi - lo);
  }
  return rewards;
}

}  // namespace kforge::train
