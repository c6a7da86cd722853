// Wall seconds since a steady_clock time point: the one helper behind the phase timings
// (harness timing, sampling, GRPO, expert iteration, curriculum, SFT). Exercised by the tests
// of those: ctest -R 'harness_timing|policy_test|train_test'.
#pragma once

#include <chrono>

namespace kforge {

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace kforge
