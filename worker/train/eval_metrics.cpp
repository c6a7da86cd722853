// Evaluation metrics; see eval_metrics.h. Pure arithmetic, no libtorch.
// Tested by tests/worker/train/eval_metrics_test.cpp (ctest -R train_test).
#include "worker/train/eval_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace kforge::train {

double pass_at_k(int n, int c, int k) {
  if (n < 1 || c < 0 || c > n || k < 1 || k > n)
    throw std::invalid_argument("pass_at_k needs 0 <= c <= n and 1 <= k <= n (got n=" + std::to_string(n) +
                                " c=" + std::to_string(c) + " k=" + std::to_string(k) + ")");
  if (n - c < k) return 1.0;
  // C(n-c,k)/C(n,k) = prod_{i=n-c+1}^{n} (1 - k/i): a product of c terms, stable for any n (Codex paper).
  double all_fail = 1.0;
  for (int draw = n - c + 1; draw <= n; ++draw) all_fail *= 1.0 - static_cast<double>(k) / draw;
  return 1.0 - all_fail;
}

const std::vector<double>& fast_thresholds() {
  static const std::vector<double> thresholds = {0.0, 1.0, 1.5, 2.0};
  return thresholds;
}

std::string threshold_key(double p) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", p);
  return text;
}

namespace {

// fast_p of one sample against one baseline's speedup. p <= 0 is correctness alone, as
// KernelBench's fast_0 (an untimed evaluation has no speedups but still a correct rate).
bool is_fast(const EvalSample& sample, double speedup, double p) {
  if (sample.outcome != Outcome::correct) return false;
  if (p <= 0) return true;
  return !sample.suspicious && std::isfinite(speedup) && speedup > p;
}

template <typename SpeedupOf>
double share_fast(const OpSamples& op, double p, SpeedupOf speedup_of) {
  if (op.samples.empty()) return 0.0;
  int fast = 0;
  for (const auto& sample : op.samples) fast += is_fast(sample, speedup_of(sample), p) ? 1 : 0;
  return static_cast<double>(fast) / op.samples.size();
}

// The metric names of EvalSummary::intervals for fast_p.
std::string fast_name(double p) {
  std::string key = threshold_key(p);
  std::replace(key.begin(), key.end(), '.', '_');
  return "fast_" + key;
}

OpEvalResult score_op(const OpSamples& op, int k) {
  OpEvalResult result;
  result.op = op.op;
  result.samples = static_cast<int>(op.samples.size());
  int compiled = 0, violations = 0;
  for (const auto& sample : op.samples) {
    compiled += outcome_compiled(sample.outcome) ? 1 : 0;
    violations += sample.outcome == Outcome::rule_violation ? 1 : 0;
    if (sample.outcome != Outcome::correct) continue;
    ++result.correct;
    if (sample.speedup_vs_compile > 0) result.compile_measured = true;
    if (!sample.suspicious && std::isfinite(sample.speedup) && sample.speedup > 0)
      result.best_speedup = std::max(result.best_speedup, sample.speedup);
  }
  if (result.samples > 0) {
    result.pass_at_1 = static_cast<double>(result.correct) / result.samples;
    result.pass_at_k = pass_at_k(result.samples, result.correct, std::min(k, result.samples));
    result.compile_rate = static_cast<double>(compiled) / result.samples;
    result.rule_violation_rate = static_cast<double>(violations) / result.samples;
  }
  for (double p : fast_thresholds()) {
    result.fast_p.push_back(fast_p_share(op, p));
    result.fast_p_compile.push_back(fast_p_compile_share(op, p));
  }
  return result;
}

double mean(const std::vector<double>& values) {
  double sum = 0;
  for (double value : values) sum += value;
  return values.empty() ? 0.0 : sum / static_cast<double>(values.size());
}

}  // namespace

double fast_p_share(const OpSamples& op, double p) {
  return share_fast(op, p, [](const EvalSample& sample) { return sample.speedup; });
}

double fast_p_compile_share(const OpSamples& op, double p) {
  return share_fast(op, p, [](const EvalSample& sample) { return sample.speedup_vs_compile; });
}

std::map<std::string, double> per_op_metric(const EvalSummary& summary, const std::string& metric) {
  std::map<std::string, double> values;
  const auto& thresholds = fast_thresholds();
  for (const auto& op : summary.per_op) {
    if (metric == "pass_at_1") values[op.op] = op.pass_at_1;
    if (metric == "pass_at_k") values[op.op] = op.pass_at_k;
    if (metric == "compile_rate") values[op.op] = op.compile_rate;
    if (metric == "rule_violation_rate") values[op.op] = op.rule_violation_rate;
    for (size_t p_idx = 0; p_idx < thresholds.size(); ++p_idx) {
      if (metric == fast_name(thresholds[p_idx])) values[op.op] = op.fast_p[p_idx];
      if (metric == fast_name(thresholds[p_idx]) + "_vs_compile" && !summary.fast_p_compile.empty())
        values[op.op] = op.fast_p_compile[p_idx];
    }
  }
  return values;
}

EvalSummary summarize_eval(const std::vector<OpSamples>& ops, int k, const stats::BootstrapOptions& bootstrap) {
  if (k < 1) throw std::invalid_argument("summarize_eval needs k >= 1 (got " + std::to_string(k) + ")");
  EvalSummary summary;
  summary.k = k;
  summary.ops = static_cast<int>(ops.size());
  summary.bootstrap = bootstrap;
  double log_speedup_sum = 0.0;
  int speedup_ops = 0;
  bool compile_measured = false;
  for (const auto& op : ops) {
    OpEvalResult result = score_op(op, k);
    if (result.correct > 0) ++summary.ops_with_correct;
    compile_measured = compile_measured || result.compile_measured;
    if (result.best_speedup > 0) {
      log_speedup_sum += std::log(result.best_speedup);
      ++speedup_ops;
    }
    summary.per_op.push_back(std::move(result));
  }
  if (speedup_ops > 0) summary.geomean_speedup = std::exp(log_speedup_sum / speedup_ops);

  // Every rate is a mean over ALL ops of a per-op value; its interval resamples ops.
  auto over_ops = [&](auto value_of) {
    std::vector<double> values;
    for (const auto& op : summary.per_op) values.push_back(value_of(op));
    return values;
  };
  auto rate = [&](const std::string& name, auto value_of) {
    std::vector<double> values = over_ops(value_of);
    summary.intervals[name] = stats::bootstrap_mean(values, bootstrap);
    return mean(values);
  };
  summary.correct_rate = rate("pass_at_1", [](const OpEvalResult& op) { return op.pass_at_1; });
  summary.pass_at_k = rate("pass_at_k", [](const OpEvalResult& op) { return op.pass_at_k; });
  summary.compile_rate = rate("compile_rate", [](const OpEvalResult& op) { return op.compile_rate; });
  summary.rule_violation_rate =
      rate("rule_violation_rate", [](const OpEvalResult& op) { return op.rule_violation_rate; });
  const auto& thresholds = fast_thresholds();
  for (size_t p_idx = 0; p_idx < thresholds.size(); ++p_idx) {
    std::string name = fast_name(thresholds[p_idx]);
    summary.fast_p.push_back(rate(name, [p_idx](const OpEvalResult& op) { return op.fast_p[p_idx]; }));
    if (compile_measured)
      summary.fast_p_compile.push_back(
          rate(name + "_vs_compile", [p_idx](const OpEvalResult& op) { return op.fast_p_compile[p_idx]; }));
  }
  summary.fast_1 = summary.fast_p[1];
  summary.fast_1_5 = summary.fast_p[2];
  summary.fast_2 = summary.fast_p[3];
  return summary;
}

}  // namespace kforge::train
