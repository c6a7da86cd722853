// Expert iteration; see rft.h. Sample (seeded per round and task) -> check_parallel ->
// keep distinct correct kernels -> SftTrainer on the pool. Tested by ctest -R train_test (Rft.*).
#include "worker/train/rft.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <set>
#include <stdexcept>
#include <utility>

#include "common/elapsed.h"
#include "worker/train/grpo_trainer.h"

namespace kforge::train {

std::string RftConfig::validate() const {
  if (rounds < 1) return "rft.rounds must be >= 1";
  if (samples_per_task < 1) return "rft.samples_per_task must be >= 1";
  if (max_kept_per_task < 1) return "rft.max_kept_per_task must be >= 1";
  if (check_threads < 1) return "rft.check_threads must be >= 1";
  if (!(sampling.temperature > 0)) return "rft.sampling.temperature must be > 0";
  if (sampling.max_new_tokens < 1) return "rft.sampling.max_new_tokens must be >= 1";
  if (sft.max_steps < 1) return "rft.sft.max_steps (steps per round) must be >= 1";
  return sft.validate();
}

std::string RftRoundMetrics::to_json() const {
  nlohmann::json outcome_counts = nlohmann::json::object();
  for (int outcome_idx = 0; outcome_idx < kOutcomeCount; ++outcome_idx)
    outcome_counts[outcome_name(static_cast<Outcome>(outcome_idx))] = outcomes[outcome_idx];
  return nlohmann::json{
      {"step", round},
      {"round", round},
      {"total_rounds", total_rounds},
      {"tasks", tasks},
      {"samples", samples},
      {"outcomes", outcome_counts},
      {"correct_rate", correct_rate},
      {"rule_violation_rate", rule_violation_rate},
      {"tasks_solved", tasks_solved},
      {"kept_new", kept_new},
      {"pool_size", pool_size},
      {"sft_steps", sft_steps},
      {"loss", sft_loss},
      {"seconds", {{"sample", sample_seconds}, {"check", check_seconds}, {"train", train_seconds}}},
  }
      .dump();
}

struct RftTrainer::Impl {
  TrainablePolicy& policy;
  Checker& checker;
  RftConfig config;
  int rounds_done = 0;
  std::vector<SftExample> pool;
  std::set<std::pair<std::string, std::string>> seen;  // (prompt, kernel) already in the pool
};

RftTrainer::RftTrainer(TrainablePolicy& policy, Checker& checker, const RftConfig& config) {
  if (auto error = config.validate(); !error.empty()) throw std::invalid_argument(error);
  impl_.reset(new Impl{policy, checker, config, 0, {}, {}});
}

RftTrainer::~RftTrainer() = default;

int RftTrainer::rounds_done() const { return impl_->rounds_done; }

const std::vector<SftExample>& RftTrainer::pool() const { return impl_->pool; }

void RftTrainer::restore(int rounds_done, std::vector<SftExample> pool) {
  impl_->rounds_done = rounds_done;
  impl_->pool = std::move(pool);
  impl_->seen.clear();
  for (const auto& example : impl_->pool) impl_->seen.emplace(example.prompt, example.completion);
}

RftRoundMetrics RftTrainer::round(const std::vector<Task>& tasks) {
  const RftConfig& config = impl_->config;
  RftRoundMetrics metrics;
  metrics.round = ++impl_->rounds_done;
  metrics.total_rounds = config.rounds;
  metrics.tasks = tasks.size();

  // 1. Sample n per task from the current weights (seeds differ by round and task).
  auto phase_start = std::chrono::steady_clock::now();
  TaskSamples sampled = sample_each_task(impl_->policy, tasks, config.samples_per_task, config.sampling,
                                     config.seed + 1000003ull * metrics.round);
  std::vector<std::string> texts = sampled.texts();
  const std::vector<const Task*>& sample_tasks = sampled.tasks;
  metrics.samples = texts.size();
  metrics.sample_seconds = seconds_since(phase_start);

  // 2. Verify every sample with the trusted checker.
  phase_start = std::chrono::steady_clock::now();
  std::vector<CheckSummary> checks = check_parallel(impl_->checker, sample_tasks, texts, config.check_threads);
  metrics.check_seconds = seconds_since(phase_start);

  // 3. Keep distinct verified kernels, at most max_kept_per_task new ones per task.
  std::vector<int> kept_of_task(tasks.size(), 0);
  std::vector<bool> solved(tasks.size(), false);
  int correct = 0, violations = 0;
  for (size_t sample_idx = 0; sample_idx < checks.size(); ++sample_idx) {
    metrics.outcomes[static_cast<int>(checks[sample_idx].outcome)]++;
    violations += checks[sample_idx].outcome == Outcome::rule_violation ? 1 : 0;
    if (checks[sample_idx].outcome != Outcome::correct) continue;
    ++correct;
    size_t task_idx = sample_tasks[sample_idx] - tasks.data();
    solved[task_idx] = true;
    if (kept_of_task[task_idx] >= config.max_kept_per_task) continue;
    const std::string& prompt = tasks[task_idx].prompt;
    if (!impl_->seen.emplace(prompt, texts[sample_idx]).second) continue;
    impl_->pool.push_back({prompt, texts[sample_idx]});
    ++kept_of_task[task_idx];
    ++metrics.kept_new;
  }
  double n = std::max<size_t>(1, checks.size());
  metrics.correct_rate = correct / n;
  metrics.rule_violation_rate = violations / n;
  metrics.tasks_solved = std::count(solved.begin(), solved.end(), true);
  metrics.pool_size = impl_->pool.size();

  // 4. Fine-tune on the whole pool (a fresh optimizer each round, warm-up included);
  //    the data order moves with the round so rounds do not replay one order.
  phase_start = std::chrono::steady_clock::now();
  if (!impl_->pool.empty()) {
    SftConfig sft = config.sft;
    sft.out_dir.clear();
    sft.checkpoint_every = 0;
    sft.seed = config.sft.seed + metrics.round;
    SftTrainer trainer(impl_->policy, impl_->pool, {}, sft);
    SftResult result = trainer.run();
    metrics.sft_steps = result.steps;
    metrics.sft_loss = result.final_loss;
  }
  metrics.train_seconds = seconds_since(phase_start);
  return metrics;
}

}  // namespace kforge::train
