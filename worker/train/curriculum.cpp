// Task rotation and the pass-rate curriculum; see curriculum.h.
// Tested by ctest -R train_test (Curriculum.*).
#include "worker/train/curriculum.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>

#include "common/elapsed.h"
#include "common/log.h"
#include "worker/train/grpo_trainer.h"

namespace kforge::train {

std::vector<TaskPassRate> measure_pass_rates(TrainablePolicy& policy, Checker& checker, const std::vector<Task>& tasks,
                                             int samples, const SamplingConfig& sampling, uint64_t seed, int threads) {
  TaskSamples sampled = sample_each_task(policy, tasks, samples, sampling, seed);
  const std::vector<const Task*>& sample_tasks = sampled.tasks;
  auto started = std::chrono::steady_clock::now();
  std::vector<CheckSummary> checks = check_parallel(checker, sample_tasks, sampled.texts(), threads);
  log_info("curriculum", "checked",
           {{"samples", std::to_string(checks.size())},
            {"seconds", std::to_string(seconds_since(started))}});
  std::vector<TaskPassRate> rates(tasks.size());
  for (size_t task_idx = 0; task_idx < tasks.size(); ++task_idx) rates[task_idx].id = tasks[task_idx].id;
  for (size_t sample_idx = 0; sample_idx < checks.size(); ++sample_idx) {
    TaskPassRate& rate = rates[sample_tasks[sample_idx] - tasks.data()];
    ++rate.samples;
    rate.correct += checks[sample_idx].outcome == Outcome::correct ? 1 : 0;
  }
  return rates;
}

std::string CurriculumStats::to_json() const {
  return nlohmann::json{{"measured", measured},         {"learnable", learnable}, {"always_solved", always_solved},
                        {"never_solved", never_solved}, {"fallback", fallback},   {"mean_pass1", mean_pass1},
                        {"seconds", seconds}}
      .dump();
}

TaskSchedule::TaskSchedule(std::vector<Task> tasks, uint64_t seed) : tasks_(std::move(tasks)), seed_(seed) {
  for (size_t task_idx = 0; task_idx < tasks_.size(); ++task_idx) order_.push_back(task_idx);
  std::mt19937_64 rng(seed_);
  std::shuffle(order_.begin(), order_.end(), rng);
}

std::vector<Task> TaskSchedule::batch(int step, int count) const {
  std::vector<Task> out;
  if (order_.empty()) return out;
  size_t cursor = static_cast<size_t>(std::max(0, step - 1)) * count;
  for (int task_idx = 0; task_idx < count; ++task_idx) out.push_back(tasks_[order_[(cursor + task_idx) % order_.size()]]);
  return out;
}

CurriculumStats TaskSchedule::set_pass_rates(const std::vector<TaskPassRate>& rates) {
  std::map<std::string, const TaskPassRate*> by_id;
  for (const auto& rate : rates) by_id[rate.id] = &rate;
  CurriculumStats stats;
  std::vector<size_t> learnable;
  double pass_sum = 0;
  for (size_t task_idx = 0; task_idx < tasks_.size(); ++task_idx) {
    auto found = by_id.find(tasks_[task_idx].id);
    if (found == by_id.end() || found->second->samples == 0) continue;
    const TaskPassRate& rate = *found->second;
    ++stats.measured;
    pass_sum += rate.pass1();
    if (rate.correct == 0) ++stats.never_solved;
    else if (rate.correct == rate.samples) ++stats.always_solved;
    else learnable.push_back(task_idx);
  }
  stats.learnable = learnable.size();
  stats.mean_pass1 = stats.measured ? pass_sum / stats.measured : 0;
  stats.fallback = learnable.empty();
  if (stats.fallback) {
    learnable.clear();
    for (size_t task_idx = 0; task_idx < tasks_.size(); ++task_idx) learnable.push_back(task_idx);
  }
  // Same seed, same set: the same rotation, so a resumed run that re-measures alike continues alike.
  std::mt19937_64 rng(seed_);
  std::shuffle(learnable.begin(), learnable.end(), rng);
  order_ = std::move(learnable);
  return stats;
}

std::optional<CurriculumStats> refresh_curriculum(TaskSchedule& schedule, TrainablePolicy& policy, Checker& checker,
                                                  const SamplingConfig& sampling, int check_threads, uint64_t seed,
                                                  int every, int samples, int step) {
  if (every <= 0 || (step - 1) % every != 0) return std::nullopt;
  auto start = std::chrono::steady_clock::now();
  // Seeds apart from the training steps' (which mix 1000003 * step), and new per refresh.
  auto rates = measure_pass_rates(policy, checker, schedule.tasks(), samples, sampling,
                                  seed ^ (0x5DEECE66Dull * static_cast<uint64_t>(step)), check_threads);
  CurriculumStats stats = schedule.set_pass_rates(rates);
  stats.seconds = seconds_since(start);
  return stats;
}

}  // namespace kforge::train
