// Evaluation runner; see evaluate.h.
// Tested by tests/worker/train/evaluate_test.cpp (ctest -R train_test).
#include "worker/train/evaluate.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <stdexcept>

#include "common/log.h"
#include "worker/train/grpo_trainer.h"

namespace kforge::train {

std::string EvalConfig::validate() const {
  if (samples_per_op < 1) return "eval.samples_per_op must be >= 1";
  if (k < 1) return "eval.k must be >= 1";
  if (check_threads < 1) return "eval.check_threads must be >= 1";
  if (sampling.temperature < 0) return "eval.sampling.temperature must be >= 0";
  if (sampling.max_new_tokens < 1) return "eval.sampling.max_new_tokens must be >= 1";
  return "";
}

EvalSummary evaluate_policy(TrainablePolicy& policy, const std::vector<Task>& tasks, Checker& checker,
                            const EvalConfig& config, std::vector<OpSamples>* raw) {
  if (auto error = config.validate(); !error.empty()) throw std::invalid_argument(error);
  // Each phase's wall time goes in the summary and, as it ends, in the log: an evaluation cut
  // short (a device call's budget) still says where its time went.
  auto phase_started = std::chrono::steady_clock::now();
  auto end_phase = [&phase_started](const std::string& what, size_t count) {
    auto now = std::chrono::steady_clock::now();
    double seconds = std::chrono::duration<double>(now - phase_started).count();
    phase_started = now;
    log_info("eval", what, {{"count", std::to_string(count)}, {"seconds", std::to_string(seconds)}});
    return seconds;
  };
  TaskSamples sampled = sample_each_task(policy, tasks, config.samples_per_op, config.sampling, config.seed);
  const std::vector<const Task*>& sample_tasks = sampled.tasks;
  const std::vector<std::string> texts = sampled.texts();
  const double sample_s = end_phase("sampled", texts.size());
  std::vector<CheckSummary> checks = check_parallel(checker, sample_tasks, texts, config.check_threads);
  const double check_s = end_phase("checked", checks.size());
  double time_s = 0.0;
  if (config.timing_checker) {
    size_t timed = 0;
    for (size_t sample_idx = 0; sample_idx < checks.size(); ++sample_idx)
      if (checks[sample_idx].outcome == Outcome::correct) {
        checks[sample_idx] = config.timing_checker->check(*sample_tasks[sample_idx], texts[sample_idx]);
        ++timed;
      }
    time_s = end_phase("timed the correct samples", timed);
  }
  std::vector<OpSamples> ops(tasks.size());
  size_t sample_idx = 0;
  for (size_t task_idx = 0; task_idx < tasks.size(); ++task_idx) {
    ops[task_idx].op = tasks[task_idx].id;
    for (; sample_idx < checks.size() && sample_tasks[sample_idx] == &tasks[task_idx]; ++sample_idx)
      ops[task_idx].samples.push_back({checks[sample_idx].outcome, checks[sample_idx].speedup,
                                       checks[sample_idx].suspicious, checks[sample_idx].message, texts[sample_idx],
                                       checks[sample_idx].speedup_vs_compile});
  }
  EvalSummary summary = summarize_eval(ops, config.k);
  summary.sample_s = sample_s;
  summary.check_s = check_s;
  summary.time_s = time_s;
  if (raw) *raw = std::move(ops);
  return summary;
}

namespace {

using Json = nlohmann::json;

// {"0": x, "1": x, "1.5": x, "2": x}: fast_p keyed by p, as KernelBench names them.
Json by_threshold(const std::vector<double>& values) {
  if (values.empty()) return Json(nullptr);
  Json out = Json::object();
  for (size_t p_idx = 0; p_idx < values.size() && p_idx < fast_thresholds().size(); ++p_idx)
    out[threshold_key(fast_thresholds()[p_idx])] = values[p_idx];
  return out;
}

}  // namespace

std::string eval_summary_to_json(const EvalSummary& s) {
  Json per_op = Json::array();
  bool compile_measured = !s.fast_p_compile.empty();
  for (const auto& op : s.per_op)
    per_op.push_back({{"op", op.op},
                      {"samples", op.samples},
                      {"correct", op.correct},
                      {"pass_at_1", op.pass_at_1},
                      {"pass_at_k", op.pass_at_k},
                      {"best_speedup", op.best_speedup},
                      {"compile_rate", op.compile_rate},
                      {"rule_violation_rate", op.rule_violation_rate},
                      {"fast_p", by_threshold(op.fast_p)},
                      {"fast_p_vs_compile", compile_measured ? by_threshold(op.fast_p_compile) : Json(nullptr)}});
  // [low, high] per metric: the web UI and `kforge eval` print them beside the value.
  Json intervals = Json::object();
  for (const auto& [name, interval] : s.intervals) intervals[name] = {interval.low, interval.high};
  if (s.intervals.count("pass_at_1")) intervals["fast_0"] = intervals["pass_at_1"];
  Json j = {{"k", s.k},
            {"ops", s.ops},
            {"compile_rate", s.compile_rate},
            {"correct_rate", s.correct_rate},
            {"pass_at_1", s.correct_rate},
            {"fast_0", s.correct_rate},
            {"pass_at_k", s.pass_at_k},
            {"fast_1", s.fast_1},
            {"fast_1_5", s.fast_1_5},
            {"fast_2", s.fast_2},
            {"fast_p", by_threshold(s.fast_p)},
            {"fast_p_vs_compile", by_threshold(s.fast_p_compile)},
            {"fast_1_vs_compile", compile_measured ? Json(s.fast_p_compile[1]) : Json(nullptr)},
            {"fast_1_5_vs_compile", compile_measured ? Json(s.fast_p_compile[2]) : Json(nullptr)},
            {"fast_2_vs_compile", compile_measured ? Json(s.fast_p_compile[3]) : Json(nullptr)},
            {"rule_violation_rate", s.rule_violation_rate},
            {"geomean_speedup", s.geomean_speedup},
            {"ops_with_correct", s.ops_with_correct},
            {"intervals", intervals},
            {"bootstrap",
             {{"resamples", s.bootstrap.resamples}, {"seed", s.bootstrap.seed}, {"level", s.bootstrap.level},
              {"over", "ops"}}},
            {"seconds", {{"sample", s.sample_s}, {"check", s.check_s}, {"time", s.time_s}}},
            {"per_op", per_op}};
  return j.dump();
}

}  // namespace kforge::train
