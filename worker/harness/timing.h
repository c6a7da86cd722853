// The timing protocol, shared by the kernel side (kforge-sandbox) and the libtorch
// eager baseline (reference.cpp) so both are measured by the same code: warm-up until
// the timings settle, then measurement windows with a stopping rule, the CPU the rest
// of the machine used during each window, and a retry when a window was disturbed.
// Test: ctest -R harness_timing.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace kforge::harness {

//! Knobs of the protocol (CheckOptions carries them to both sides).
struct TimingProtocol {
  double max_seconds = 1.0;       //!< a measurement window stops after this long...
  double target_iqr = 0.02;       //!< ...or once IQR/median is below this (after 10 runs)
  int min_runs = 5;               //!< runs per window at least
  int max_runs = 100000;          //!< runs per window at most
  //! A window lasts at least this long (unless max_seconds is shorter): the contention meter
  //! counts /proc/stat's clock ticks (10 ms per CPU), and over a few milliseconds two busy
  //! processes can read as none (docs/harness.md, "Contention").
  double min_window_seconds = 0.2;
  int touch_runs = 2;             //!< warm-up runs at least (the kernel side: every rotation set once)
  double settle_tolerance = 0.05; //!< warm-up ends when two consecutive block medians agree within this
  double max_warmup_fraction = 0.5;  //!< warm-up stops after this fraction of max_seconds regardless
  double min_warmup_seconds = 0;  //!< ... but lasts at least this long (GPUs ramp their clocks up under load)
  int attempts = 2;               //!< measurement windows at most; another only after a disturbed one
  double max_contention = 0.25;   //!< a window in which other processes used more cores than this is disturbed
};

//! One timed run: wall-clock time around the work and its device sync, and device time
//! from profiling events where there are any (else 0).
struct TimingSample {
  double wall_ms = 0;
  double device_ms = 0;
};

//! What the protocol measured (the window kept: the least disturbed one).
struct TimingRecord {
  double median_ms = 0, min_ms = 0, iqr_ms = 0;
  int runs = 0;
  double device_median_ms = 0;  //!< median of TimingSample::device_ms
  int warmup_runs = 0;
  bool settled = false;         //!< warm-up ended because the timings settled (not at its cap)
  int attempts = 0;             //!< measurement windows run
  double others_cores = 0;      //!< CPU used by other processes during the kept window, in cores (-1 unknown)
  bool disturbed = false;       //!< the kept window still exceeded max_contention
  std::vector<double> attempt_medians_ms;  //!< median of every window, in order
};

//! How a window's contention is measured: start() at its beginning, others_cores() at its
//! end. Default: ContentionMeter (/proc/stat); tests substitute their own.
struct ContentionProbe {
  std::function<void()> start;
  std::function<double()> others_cores;
};

//! Runs `run(run_idx)` under the protocol: warm-up in blocks of `block` runs (at least
//! touch_runs) until two consecutive block medians agree, then windows as described above.
TimingRecord run_timing_protocol(const std::function<TimingSample(int run_idx)>& run, const TimingProtocol& protocol,
                                 int block = 3, const ContentionProbe* probe = nullptr);

//! Median of `values` (upper median for an even count, as everywhere in the harness); 0 when empty.
double timing_median(std::vector<double> values);
//! Interquartile range, sorted[3n/4] - sorted[n/4]; 0 when empty.
double timing_iqr(std::vector<double> values);

}  // namespace kforge::harness
