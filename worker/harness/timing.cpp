// The shared timing protocol behind timing.h. Why each step exists is in
// docs/harness.md ("Timing" and "Why the timer drifted"). Test: ctest -R harness_timing.
#include "worker/harness/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "common/elapsed.h"
#include "worker/harness/cpu_contention.h"

namespace kforge::harness {
namespace {

using clock_type = std::chrono::steady_clock;

struct Window {
  std::vector<double> wall, device;
  double others_cores = 0;
};

}  // namespace

double timing_median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

double timing_iqr(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() * 3 / 4] - values[values.size() / 4];
}

TimingRecord run_timing_protocol(const std::function<TimingSample(int run_idx)>& run, const TimingProtocol& protocol,
                                 int block, const ContentionProbe* probe) {
  ContentionMeter meter;
  ContentionProbe machine{[&meter] { meter.start(); }, [&meter] { return meter.others_cores(); }};
  if (!probe) probe = &machine;
  TimingRecord record;
  block = std::max(1, block);
  int run_idx = 0;
  // Warm-up until settled: blocks of `block` runs (a block visits every rotation set),
  // until two consecutive block medians agree within settle_tolerance. A fixed count
  // is not enough: a fresh process's first runs are slower for a while (page faults,
  // thread start-up, caches) and how long depends on the kernel and the machine.
  auto warm_started = clock_type::now();
  const double warm_cap_s = protocol.max_seconds * protocol.max_warmup_fraction;
  double previous_block = -1;
  while (true) {
    std::vector<double> samples;
    for (int in_block = 0; in_block < block; ++in_block) {
      samples.push_back(run(run_idx++).wall_ms);
      ++record.warmup_runs;
      if (record.warmup_runs >= protocol.touch_runs && seconds_since(warm_started) > warm_cap_s) break;
    }
    double current = timing_median(samples);
    const bool warm_enough = seconds_since(warm_started) >= protocol.min_warmup_seconds;
    if (warm_enough && record.warmup_runs >= protocol.touch_runs && previous_block > 0 &&
        std::fabs(current - previous_block) <= protocol.settle_tolerance * current) {
      record.settled = true;
      break;
    }
    if (warm_enough && record.warmup_runs >= protocol.touch_runs && seconds_since(warm_started) > warm_cap_s) break;
    previous_block = current;
  }
  // Measurement windows: another window only when the previous one was disturbed by
  // other processes; keep the least disturbed one (never the fastest: that would bias).
  Window kept;
  bool have_kept = false;
  for (int attempt_idx = 0; attempt_idx < std::max(1, protocol.attempts); ++attempt_idx) {
    Window window;
    probe->start();
    auto begin = clock_type::now();
    size_t next_spread_check = 10;  // the spread is checked at 10 runs, then every ~10% more (sorting is O(n log n))
    for (int window_run = 0; window_run < protocol.max_runs; ++window_run) {
      TimingSample sample = run(run_idx++);
      window.wall.push_back(sample.wall_ms);
      window.device.push_back(sample.device_ms);
      if (static_cast<int>(window.wall.size()) < protocol.min_runs) continue;
      const double window_s = seconds_since(begin);
      if (window_s > protocol.max_seconds) break;
      if (window_s < protocol.min_window_seconds || window.wall.size() < next_spread_check) continue;
      next_spread_check = window.wall.size() + std::max<size_t>(1, window.wall.size() / 10);
      if (timing_iqr(window.wall) <= protocol.target_iqr * timing_median(window.wall)) break;
    }
    window.others_cores = probe->others_cores();
    ++record.attempts;
    record.attempt_medians_ms.push_back(timing_median(window.wall));
    if (!have_kept || window.others_cores < kept.others_cores) {
      kept = std::move(window);
      have_kept = true;
    }
    if (kept.others_cores <= protocol.max_contention) break;
  }
  record.median_ms = timing_median(kept.wall);
  record.min_ms = *std::min_element(kept.wall.begin(), kept.wall.end());
  record.iqr_ms = timing_iqr(kept.wall);
  record.runs = static_cast<int>(kept.wall.size());
  record.device_median_ms = timing_median(kept.device);
  record.others_cores = kept.others_cores;
  record.disturbed = kept.others_cores > protocol.max_contention;
  return record;
}

}  // namespace kforge::harness
