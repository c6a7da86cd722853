// Evaluation metrics over an op suite: unbiased pass@k from n samples per op,
// compile rate, correct rate, fast_p (share of ALL ops correct and faster than
// eager by more than p), geometric-mean speedup. Tested by eval_metrics_test.cpp.
#pragma once

#include <string>
#include <vector>

#include "worker/train/reward.h"

namespace kforge::train {

//! Unbiased pass@k estimate from n samples of which c are correct: 1 - C(n-c,k)/C(n,k).
//! Requires 0 <= c <= n and 1 <= k <= n (throws std::invalid_argument otherwise).
double pass_at_k(int n, int c, int k);

//! One checked sample of one op.
struct EvalSample {
  Outcome outcome = Outcome::format_error;  //!< harness outcome
  double speedup = 0.0;                     //!< eager / kernel time when correct
  bool suspicious = false;                  //!< speedup flagged by the harness
  std::string message;                      //!< the harness's reason (for sample dumps)
  std::string text;                         //!< the completion (for sample dumps)
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
  double geomean_speedup = 0.0;    //!< geometric mean of best_speedup over ops with a trusted correct sample; 0 if none
  int ops_with_correct = 0;        //!< ops with at least one correct sample
  std::vector<OpEvalResult> per_op;  //!< one entry per op, input order
};

//! Share of ALL samples of one op that are correct, not suspicious, and faster than eager by more than p.
double fast_p_share(const OpSamples& op, double p);

//! Scores every op and the suite. Ops with no samples count as failures (0 everywhere).
//! Suspicious speedups count as correct but never as fast.
EvalSummary summarize_eval(const std::vector<OpSamples>& ops, int k);

}  // namespace kforge::train
