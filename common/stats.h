// Seeded bootstrap confidence intervals over tasks (ops): the mean of per-op values
// and the paired difference of two models' per-op values. Pure arithmetic, reproducible
// for a given seed on every platform. Test: ctest -R common_stats_test.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace kforge::stats {

//! A point estimate with its confidence interval.
struct Interval {
  double estimate = 0;  //!< the statistic on the data as observed (the mean, or the mean difference)
  double low = 0;       //!< lower percentile of the bootstrap distribution
  double high = 0;      //!< upper percentile of the bootstrap distribution
};

//! Percentile bootstrap settings. The defaults are what evaluations report.
struct BootstrapOptions {
  int resamples = 10000;        //!< bootstrap replicates
  uint64_t seed = 20240917;     //!< mt19937_64 seed: the same data and seed give the same interval
  double level = 0.95;          //!< two-sided coverage (0.95: the 2.5th and 97.5th percentiles)
};

//! The q-quantile (0..1) of `values` by linear interpolation between order statistics
//! (numpy's default, Hyndman-Fan type 7). Sorts a copy; 0 for an empty vector.
double quantile(std::vector<double> values, double q);

//! Mean of `values` with a percentile-bootstrap interval from resampling the values
//! (ops) with replacement. An empty vector gives {0, 0, 0}.
Interval bootstrap_mean(const std::vector<double>& values, const BootstrapOptions& options = {});

//! Mean of `after[i] - before[i]` with a paired percentile-bootstrap interval: each
//! replicate resamples op indices and takes both models' values of the same ops, so
//! op difficulty cancels. Throws std::invalid_argument when the sizes differ.
Interval paired_bootstrap_difference(const std::vector<double>& before, const std::vector<double>& after,
                                     const BootstrapOptions& options = {});

//! True when two intervals share at least one point.
bool intervals_overlap(const Interval& a, const Interval& b);

//! One task's (op's) value in two runs.
struct PairedDelta {
  std::string name;   //!< the task (op name)
  double before = 0;  //!< the baseline run's value
  double after = 0;   //!< the other run's value
  double delta = 0;   //!< after - before
};

//! Two runs compared on one per-task metric over the tasks both have.
struct PairedComparison {
  int tasks = 0;                  //!< tasks in common
  Interval before;                //!< baseline mean over common tasks, bootstrap interval
  Interval after;                 //!< the other run's mean over common tasks, bootstrap interval
  Interval difference;            //!< mean of per-task deltas, paired bootstrap interval
  bool intervals_overlap = true;  //!< `before` and `after` intervals share a point
  std::vector<PairedDelta> per_task;  //!< common tasks in `before`'s order
};

//! Compares a baseline's per-task values (in its order) with another run's (by name).
//! Tasks only one run has are left out (the caller reports them); none in common
//! gives tasks = 0 and zero intervals.
PairedComparison compare_paired(const std::vector<std::pair<std::string, double>>& before,
                                const std::map<std::string, double>& after, const BootstrapOptions& options = {});

}  // namespace kforge::stats
