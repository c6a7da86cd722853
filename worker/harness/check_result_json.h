// JSON of the checker's timing records, shared by the sandbox's `time` reply (read in
// checker.cpp) and CheckResult::to_json / from_json (check_result.cpp): one list of keys
// and defaults. Internal to the harness. Test: ctest -R harness_checker_test.
#pragma once

#include <nlohmann/json.hpp>

#include "worker/harness/checker.h"

namespace kforge::harness {

//! {"median_ms", "min_ms", "iqr_ms", "runs", "rotations", "kernel_median_ms", "warmup_runs",
//! "settled", "attempts", "others_cores", "disturbed"}.
nlohmann::json timing_stats_to_json(const TimingStats& stats);
//! The inverse; missing keys take TimingStats' defaults.
TimingStats timing_stats_from_json(const nlohmann::json& json);

}  // namespace kforge::harness
