// CPU contention meter: how much CPU the rest of the machine used while we timed
// something (machine-wide busy time from /proc/stat minus this process's own CPU
// time), in cores. The timer records it beside every timing. Test: ctest -R harness_timing.
#pragma once

#include <chrono>

namespace kforge::harness {

//! Measures, between start() and the reading, the CPU used by everything except this process.
class ContentionMeter {
 public:
  //! Starts a window now.
  void start();
  //! Cores the rest of the machine kept busy since start(): 0 = idle, 2 = two other cores' worth.
  //! Negative readings (clock granularity) are reported as 0. Returns -1 where /proc/stat is unavailable.
  double others_cores() const;
  //! Steal time (the hypervisor ran someone else) since start(), in cores.
  double steal_cores() const;

 private:
  struct Sample {
    double busy_s = -1, steal_s = 0, self_s = 0;
    std::chrono::steady_clock::time_point at;
  };
  static Sample sample();
  Sample begin_;
};

}  // namespace kforge::harness
