// Seeded percentile-bootstrap intervals over ops and paired comparisons of two runs;
// see stats.h. Test: ctest -R common_stats_test.
#include "common/stats.h"

#include <algorithm>
#include <random>
#include <stdexcept>
#include <string>

namespace kforge::stats {
namespace {

// Replicate means of `values` resampled with replacement. Indices come from the raw
// mt19937_64 output modulo n (std::uniform_int_distribution differs between standard
// libraries; the modulo bias is below n / 2^64), so a seed gives the same draws everywhere.
std::vector<double> replicate_means(const std::vector<double>& values, const BootstrapOptions& options) {
  if (options.resamples < 1) throw std::invalid_argument("bootstrap needs resamples >= 1");
  if (!(options.level > 0 && options.level < 1)) throw std::invalid_argument("bootstrap needs 0 < level < 1");
  std::mt19937_64 rng(options.seed);
  const uint64_t count = values.size();
  std::vector<double> means(options.resamples);
  for (auto& mean : means) {
    double sum = 0;
    for (uint64_t draw = 0; draw < count; ++draw) sum += values[rng() % count];
    mean = sum / static_cast<double>(count);
  }
  return means;
}

double mean_of(const std::vector<double>& values) {
  double sum = 0;
  for (double value : values) sum += value;
  return values.empty() ? 0 : sum / static_cast<double>(values.size());
}

Interval percentile_interval(double estimate, const std::vector<double>& replicates, double level) {
  double tail = (1 - level) / 2;
  return {estimate, quantile(replicates, tail), quantile(replicates, 1 - tail)};
}

}  // namespace

double quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  double position = std::clamp(q, 0.0, 1.0) * static_cast<double>(values.size() - 1);
  size_t below = static_cast<size_t>(position);
  if (below + 1 >= values.size()) return values.back();
  double fraction = position - static_cast<double>(below);
  return values[below] + fraction * (values[below + 1] - values[below]);
}

Interval bootstrap_mean(const std::vector<double>& values, const BootstrapOptions& options) {
  if (values.empty()) return {};
  return percentile_interval(mean_of(values), replicate_means(values, options), options.level);
}

Interval paired_bootstrap_difference(const std::vector<double>& before, const std::vector<double>& after,
                                     const BootstrapOptions& options) {
  if (before.size() != after.size())
    throw std::invalid_argument("paired bootstrap needs one value per op from each model (got " +
                                std::to_string(before.size()) + " and " + std::to_string(after.size()) + ")");
  // Resampling ops of the per-op differences is resampling the pairs.
  std::vector<double> differences(before.size());
  for (size_t op_idx = 0; op_idx < before.size(); ++op_idx) differences[op_idx] = after[op_idx] - before[op_idx];
  return bootstrap_mean(differences, options);
}

bool intervals_overlap(const Interval& a, const Interval& b) { return a.low <= b.high && b.low <= a.high; }

PairedComparison compare_paired(const std::vector<std::pair<std::string, double>>& before,
                                const std::map<std::string, double>& after, const BootstrapOptions& options) {
  PairedComparison out;
  std::vector<double> before_values, after_values;
  for (const auto& [name, value] : before) {
    auto found = after.find(name);
    if (found == after.end()) continue;
    out.per_task.push_back({name, value, found->second, found->second - value});
    before_values.push_back(value);
    after_values.push_back(found->second);
  }
  out.tasks = static_cast<int>(out.per_task.size());
  if (out.tasks == 0) return out;
  out.before = bootstrap_mean(before_values, options);
  out.after = bootstrap_mean(after_values, options);
  out.difference = paired_bootstrap_difference(before_values, after_values, options);
  out.intervals_overlap = intervals_overlap(out.before, out.after);
  return out;
}

}  // namespace kforge::stats
