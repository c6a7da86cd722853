// Evaluation metrics; see eval_metrics.h. Pure arithmetic, no libtorch.
// Tested by tests/worker/train/eval_metrics_test.cpp.
#include "worker/train/eval_metrics.h"

#include <algorithm>
#include <cmath>
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

namespace {

bool trusted_fast(const EvalSample& sample, double p) {
  return sample.outcome == Outcome::correct && !sample.suspicious && std::isfinite(sample.speedup) &&
         sample.speedup > p;
}

}  // namespace

double fast_p_share(const OpSamples& op, double p) {
  if (op.samples.empty()) return 0.0;
  int fast = 0;
  for (const auto& sample : op.samples) fast += trusted_fast(sample, p) ? 1 : 0;
  return static_cast<double>(fast) / op.samples.size();
}

EvalSummary summarize_eval(const std::vector<OpSamples>& ops, int k) {
  if (k < 1) throw std::invalid_argument("summarize_eval needs k >= 1 (got " + std::to_string(k) + ")");
  EvalSummary summary;
  summary.k = k;
  summary.ops = static_cast<int>(ops.size());
  double log_speedup_sum = 0.0;
  int speedup_ops = 0;
  for (const auto& op : ops) {
    OpEvalResult result;
    result.op = op.op;
    result.samples = static_cast<int>(op.samples.size());
    int compiled = 0;
    for (const auto& sample : op.samples) {
      compiled += outcome_compiled(sample.outcome) ? 1 : 0;
      if (sample.outcome != Outcome::correct) continue;
      ++result.correct;
      if (!sample.suspicious && std::isfinite(sample.speedup) && sample.speedup > 0)
        result.best_speedup = std::max(result.best_speedup, sample.speedup);
    }
    if (result.samples > 0) {
      result.pass_at_1 = static_cast<double>(result.correct) / result.samples;
      result.pass_at_k = pass_at_k(result.samples, result.correct, std::min(k, result.samples));
      result.compile_rate = static_cast<double>(compiled) / result.samples;
    }
    summary.compile_rate += result.compile_rate;
    summary.correct_rate += result.pass_at_1;
    summary.pass_at_k += result.pass_at_k;
    summary.fast_1 += fast_p_share(op, 1.0);
    summary.fast_1_5 += fast_p_share(op, 1.5);
    summary.fast_2 += fast_p_share(op, 2.0);
    if (result.correct > 0) ++summary.ops_with_correct;
    if (result.best_speedup > 0) {
      log_speedup_sum += std::log(result.best_speedup);
      ++speedup_ops;
    }
    summary.per_op.push_back(std::move(result));
  }
  if (summary.ops > 0) {
    double ops_count = summary.ops;
    summary.compile_rate /= ops_count;
    summary.correct_rate /= ops_count;
    summary.pass_at_k /= ops_count;
    summary.fast_1 /= ops_count;
    summary.fast_1_5 /= ops_count;
    summary.fast_2 /= ops_count;
  }
  if (speedup_ops > 0) summary.geomean_speedup = std::exp(log_speedup_sum / speedup_ops);
  return summary;
}

}  // namespace kforge::train
