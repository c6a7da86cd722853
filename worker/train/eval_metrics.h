// Evaluation metrics over an op suite: unbiased pass@k from n samples per op (Codex),
// compile rate, correct rate, fast_p as KernelBench defines it (share of ALL ops correct
// and faster than the baseline by more than p; vs eager and, where timed, torch.compile),
// rule-violation rate, geometric-mean speedup, each with a seeded 95% bootstrap interval
// over ops (common/stats.h, which also compares two evaluations op by op).
// Tested by tests/worker/train/eval_metrics_test.cpp (ctest -R train_test).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/stats.h"
#include "worker/train/reward.h"

namespace kforge::train {

//! Unbiased pass@k estimate from n samples of which c are correct: 1 - C(n-c,k)/C(n,k).
//! Requires 0 <= c <= n and 1 <= k <= n (throws std::invalid_argument otherwise).
double pass_at_k(int n, int c, int k);

//! The p of fast_p that evaluations report (KernelBench's fast_0, fast_1 and friends).
const std::vector<double>& fast_thresholds();

//! "0", "1", "1.5", "2": the key of a threshold in JSON objects and metric names.
std::string threshold_key(double p);

//! One checked sample of one op.
struct EvalSample {
  Outcome outcome = Outcome::format_error;  //!< harness outcome
  double speedup = 0.0;                     //!< eager / kernel time when correct
  bool suspicious = false;                  //!< speedup flagged by the harness
  std::string message;                      //!< the harness's reason (for sample dumps)
  std::string text;                         //!< the completion (for sample dumps)
  double speedup_vs_compile = 0.0;          //!< torch.compile / kernel time; 0 when not measured
};

//! All samples drawn for one op.
struct OpSamples {
  std::string op;                   //!< op name
  std::vector<EvalSample> samples;  //!< n samples, in any order
};

//! Per-op result.
struct OpEvalResult {
  std::string op;              //!< op name
  int samples = 0;             //!< n
  int correct = 0;             //!< c
  double pass_at_1 = 0.0;      //!< c / n
  double pass_at_k = 0.0;      //!< unbiased pass@k (k clamped to n)
  double best_speedup = 0.0;   //!< best speedup among correct, non-suspicious samples; 0 if none
  double compile_rate = 0.0;   //!< share of samples that compiled
  double rule_violation_rate = 0.0;   //!< share of samples that broke a static rule
  std::vector<double> fast_p;          //!< per fast_thresholds(): share of samples fast vs eager
  std::vector<double> fast_p_compile;  //!< same vs torch.compile (0 where not measured)
  bool compile_measured = false;       //!< some correct sample has a torch.compile time
};

//! Overall metrics of one evaluation.
struct EvalSummary {
  int k = 1;                       //!< the k of pass@k
  int ops = 0;                     //!< ops evaluated
  double compile_rate = 0.0;       //!< mean over ops of the share of samples that compiled
  double correct_rate = 0.0;       //!< fast_0: mean over ops of the share of correct samples (= mean pass@1)
  double pass_at_k = 0.0;          //!< mean over ops of pass@k
  double fast_1 = 0.0;             //!< mean over ops of the share of samples correct with speedup > 1
  double fast_1_5 = 0.0;           //!< same with speedup > 1.5
  double fast_2 = 0.0;             //!< same with speedup > 2
  double rule_violation_rate = 0.0;  //!< mean over ops of the share of samples that broke a rule
  std::vector<double> fast_p;        //!< per fast_thresholds(), vs eager (fast_p[0] = correct_rate)
  //! Per fast_thresholds(), vs torch.compile; empty when no sample had a compile baseline.
  std::vector<double> fast_p_compile;
  double geomean_speedup = 0.0;    //!< geometric mean of best_speedup over ops with a trusted correct sample; 0 if none
  int ops_with_correct = 0;        //!< ops with at least one correct sample
  //! 95% bootstrap interval over ops of each rate above, by metric name: pass_at_1,
  //! pass_at_k, compile_rate, rule_violation_rate, fast_<p> and fast_<p>_vs_compile.
  std::map<std::string, stats::Interval> intervals;
  stats::BootstrapOptions bootstrap;  //!< how the intervals were drawn
  std::vector<OpEvalResult> per_op;   //!< one entry per op, input order
  //! Wall seconds of evaluate_policy's phases: sampling every op, checking every sample, and
  //! timing the correct ones alone (0 without a timing checker). Not set by summarize_eval.
  double sample_s = 0.0, check_s = 0.0, time_s = 0.0;
};

//! Share of ALL samples of one op that are correct and faster than eager by more than p.
//! p <= 0 is correctness alone (KernelBench's fast_0). For p > 0 a suspicious speedup never counts.
double fast_p_share(const OpSamples& op, double p);

//! The same against torch.compile (samples without a compile time are not fast for p > 0).
double fast_p_compile_share(const OpSamples& op, double p);

//! Scores every op and the suite. Ops with no samples count as failures (0 everywhere).
//! Suspicious speedups count as correct but never as fast.
EvalSummary summarize_eval(const std::vector<OpSamples>& ops, int k, const stats::BootstrapOptions& bootstrap = {});

//! The per-op values of one metric named as in EvalSummary::intervals, by op name
//! (what stats::compare_paired takes). Unknown metric: empty map.
std::map<std::string, double> per_op_metric(const EvalSummary& summary, const std::string& metric);

}  // namespace kforge::train
