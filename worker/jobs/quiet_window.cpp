// wait_for_quiet behind worker/jobs/quiet_window.h, on harness::ContentionMeter (/proc/stat
// minus this process). Test: ctest -R jobs_quiet_window_test.
#include "worker/jobs/quiet_window.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <chrono>
#include <string>
#include <thread>

#include "common/config.h"
#include "worker/harness/cpu_contention.h"

namespace kforge::jobs {

QuietWait wait_for_quiet(double max_wait_s, double max_contention, const std::function<bool()>& stop,
                         const ContentionProbe& probe, double probe_s) {
  QuietWait out;
  auto started = std::chrono::steady_clock::now();
  auto measure = [&](double seconds) {
    if (probe) return probe(seconds);
    harness::ContentionMeter meter;
    meter.start();
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    return meter.others_cores();
  };
  for (;;) {
    double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    double left = max_wait_s - waited;
    if (left <= 0.01 || (stop && stop())) break;
    out.others_cores = measure(std::min(probe_s, left));
    // Unknown (-1, no /proc/stat) counts as quiet: nothing to wait for.
    if (out.others_cores <= max_contention) {
      out.quiet = true;
      break;
    }
  }
  out.waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return out;
}

namespace {
// steady_clock nanoseconds when the last unsuccessful wait ended; 0: never.
std::atomic<int64_t> g_busy_spell_ns{0};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

bool in_busy_spell(double spell_s) {
  int64_t last = g_busy_spell_ns.load();
  return last != 0 && static_cast<double>(now_ns() - last) < spell_s * 1e9;
}

void note_busy_spell() { g_busy_spell_ns.store(now_ns()); }

double quiet_wait_allowance_s(double time_budget_s) {
  double configured = std::stod(env_or("KFORGE_QUIET_WAIT_S", "10"));
  return std::max(0.0, std::min(configured, time_budget_s / 4));
}

}  // namespace kforge::jobs
