// Which tasks GRPO trains on: a seeded rotation over the train tasks and, with a curriculum,
// only those the current policy solves sometimes (0 < pass@1 < 1): a group of all-correct or
// all-wrong samples has zero variance and teaches nothing. Pass rates are measured by
// sampling and checking, and re-measured every N steps by the caller. Used by the train_grpo
// job and kforge-train grpo. Tested by ctest -R train_test (Curriculum.*).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "worker/train/trainable_policy.h"

namespace kforge::train {

//! How often one task was solved when measured.
struct TaskPassRate {
  std::string id;   //!< task id (op name)
  int samples = 0;  //!< completions checked
  int correct = 0;  //!< of them correct
  //! correct / samples (0 without samples): the unbiased pass@1.
  double pass1() const { return samples > 0 ? static_cast<double>(correct) / samples : 0.0; }
};

//! Samples `samples` completions per task (seed mixed with the task index) and checks them
//! with up to `threads` checks at once.
std::vector<TaskPassRate> measure_pass_rates(TrainablePolicy& policy, Checker& checker, const std::vector<Task>& tasks,
                                             int samples, const SamplingConfig& sampling, uint64_t seed, int threads);

//! What one curriculum refresh found.
struct CurriculumStats {
  int measured = 0;       //!< tasks measured
  int learnable = 0;      //!< 0 < pass@1 < 1: the rotation
  int always_solved = 0;  //!< pass@1 == 1
  int never_solved = 0;   //!< pass@1 == 0
  bool fallback = false;  //!< no task was learnable: the rotation keeps every task
  double mean_pass1 = 0;  //!< over the measured tasks
  double seconds = 0;     //!< sampling + checking time (set by the caller)

  //! JSON object text.
  std::string to_json() const;
};

//! A seeded rotation over tasks; step s (1-based) takes `count` consecutive entries, so a
//! resumed run gets the batches an uninterrupted one would while the rotation is the same.
class TaskSchedule {
 public:
  //! All tasks in a rotation shuffled by `seed`.
  TaskSchedule(std::vector<Task> tasks, uint64_t seed);
  //! The batch of 1-based step `step`.
  std::vector<Task> batch(int step, int count) const;
  //! Keeps only tasks with 0 < pass@1 < 1 in the rotation (every task when none is); rates
  //! are matched to tasks by id, and a task without a rate stays out.
  CurriculumStats set_pass_rates(const std::vector<TaskPassRate>& rates);
  //! Every task (measure these).
  const std::vector<Task>& tasks() const { return tasks_; }
  //! Tasks in the rotation now.
  size_t active() const { return order_.size(); }

 private:
  std::vector<Task> tasks_;
  uint64_t seed_;
  std::vector<size_t> order_;  // indices into tasks_, the rotation
};

//! At steps 1, 1 + every, 1 + 2 every... (1-based `step`): measures every task's pass@1 with
//! `samples` samples at the GRPO sampling settings and narrows `schedule` to the learnable
//! ones. Returns the stats of a refresh, or nullopt on other steps (and when every is 0).
std::optional<CurriculumStats> refresh_curriculum(TaskSchedule& schedule, TrainablePolicy& policy, Checker& checker,
                                                  const SamplingConfig& sampling, int check_threads, uint64_t seed,
                                                  int every, int samples, int step);

}  // namespace kforge::train
