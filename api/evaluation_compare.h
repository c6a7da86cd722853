// Two finished evaluations compared op by op (GET /v1/evaluations/{id}/compare):
// per-op deltas of pass@1, fast_1 (vs eager and vs torch.compile where both measured it)
// and the rule-violation rate, with each model's bootstrap interval over the common ops
// and a paired bootstrap interval of the difference. Pure JSON in, JSON out.
// Test: ctest -R cli_test (EvalStartShowAndCompare, real server and PostgreSQL) and jobs_training_test.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kforge::api {

//! The metrics compared, in the order they are reported.
const std::vector<std::string>& compared_metrics();

//! Compares `tasks` arrays (the per-op rows an evaluate job stores) of a baseline and
//! another evaluation: {"bootstrap", "ops_compared", "only_in_baseline",
//! "only_in_evaluation", "metrics": {name: {ops, baseline, evaluation, difference,
//! intervals_overlap, difference_excludes_zero}}, "per_op": [{op, name: {baseline,
//! evaluation, delta}}]}. A metric that either side lacks for every op is left out.
nlohmann::json compare_evaluation_tasks(const nlohmann::json& baseline_tasks, const nlohmann::json& tasks);

}  // namespace kforge::api
