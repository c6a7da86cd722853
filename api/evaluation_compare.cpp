// Evaluation comparison (GET /v1/evaluations/{id}/compare): per-op deltas and paired
// bootstrap intervals; see evaluation_compare.h. Test: ctest -R cli_test (EvalStartShowAndCompare).
#include "api/evaluation_compare.h"

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/stats.h"

namespace kforge::api {
namespace {

using json = nlohmann::json;

// One op's value of a metric from its stored row, or null when the row lacks it (rows
// written before the metric existed, or fast_1 vs compile on a device without that baseline).
json task_value(const json& task, const std::string& metric) {
  auto number_at = [](const json& object, const char* key) {
    return object.is_object() && object.contains(key) && object[key].is_number() ? object[key] : json(nullptr);
  };
  if (metric == "fast_1") return number_at(task.value("fast_p", json()), "1");
  if (metric == "fast_1_vs_compile") return number_at(task.value("fast_p_vs_compile", json()), "1");
  return number_at(task, metric.c_str());
}

json interval_json(const stats::Interval& interval) {
  return {{"value", interval.estimate}, {"ci", {interval.low, interval.high}}};
}

// `tasks` itself when it is an array, else an empty one. A reference, never a copy: the
// comparison keeps pointers to the rows.
const json& rows_of(const json& tasks) {
  static const json empty = json::array();
  return tasks.is_array() ? tasks : empty;
}

}  // namespace

const std::vector<std::string>& compared_metrics() {
  static const std::vector<std::string> metrics = {"pass_at_1", "pass_at_k", "fast_1", "fast_1_vs_compile",
                                                   "rule_violation_rate"};
  return metrics;
}

json compare_evaluation_tasks(const json& baseline_rows, const json& evaluation_rows) {
  const json& baseline_tasks = rows_of(baseline_rows);
  const json& tasks = rows_of(evaluation_rows);
  std::vector<std::string> baseline_ops;
  std::set<std::string> evaluated;
  std::map<std::string, const json*> rows;
  for (const auto& task : tasks) {
    std::string op = task.value("op", "");
    evaluated.insert(op);
    rows[op] = &task;
  }
  json only_in_baseline = json::array(), per_op = json::array();
  std::map<std::string, size_t> per_op_index;
  for (const auto& task : baseline_tasks) {
    std::string op = task.value("op", "");
    baseline_ops.push_back(op);
    if (!evaluated.count(op)) {
      only_in_baseline.push_back(op);
      continue;
    }
    per_op_index[op] = per_op.size();
    per_op.push_back({{"op", op}});
  }
  json only_in_evaluation = json::array();
  std::set<std::string> in_baseline(baseline_ops.begin(), baseline_ops.end());
  for (const auto& task : tasks)
    if (!in_baseline.count(task.value("op", ""))) only_in_evaluation.push_back(task.value("op", ""));

  stats::BootstrapOptions options;
  json metrics = json::object();
  for (const auto& metric : compared_metrics()) {
    std::vector<std::pair<std::string, double>> before;
    std::map<std::string, double> after;
    for (const auto& task : baseline_tasks) {
      std::string op = task.value("op", "");
      if (!rows.count(op)) continue;
      json was = task_value(task, metric), now = task_value(*rows[op], metric);
      if (!was.is_number() || !now.is_number()) continue;
      before.emplace_back(op, was.get<double>());
      after[op] = now.get<double>();
    }
    stats::PairedComparison cmp = stats::compare_paired(before, after, options);
    if (cmp.tasks == 0) continue;
    for (const auto& delta : cmp.per_task)
      per_op[per_op_index[delta.name]][metric] = {
          {"baseline", delta.before}, {"evaluation", delta.after}, {"delta", delta.delta}};
    metrics[metric] = {{"ops", cmp.tasks},
                       {"baseline", interval_json(cmp.before)},
                       {"evaluation", interval_json(cmp.after)},
                       {"difference", interval_json(cmp.difference)},
                       {"intervals_overlap", cmp.intervals_overlap},
                       {"difference_excludes_zero", cmp.difference.low > 0 || cmp.difference.high < 0}};
  }
  return {{"bootstrap",
           {{"resamples", options.resamples}, {"seed", options.seed}, {"level", options.level}, {"over", "ops"},
            {"paired", true}}},
          {"ops_compared", per_op.size()},
          {"only_in_baseline", only_in_baseline},
          {"only_in_evaluation", only_in_evaluation},
          {"metrics", metrics},
          {"per_op", per_op}};
}

}  // namespace kforge::api
