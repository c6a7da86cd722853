// ContentionMeter: /proc/stat's first line (all CPUs, in clock ticks) against
// getrusage(RUSAGE_SELF) (all threads of this process). Test: ctest -R harness_timing.
#include "worker/harness/cpu_contention.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

namespace kforge::harness {

ContentionMeter::Sample ContentionMeter::sample() {
  Sample out;
  out.at = std::chrono::steady_clock::now();
  std::ifstream stat("/proc/stat");
  std::string label;
  long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  if (stat >> label >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal && label == "cpu") {
    const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
    out.busy_s = static_cast<double>(user + nice + system + irq + softirq) / hz;
    out.steal_s = static_cast<double>(steal) / hz;
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  out.self_s = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
               static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  return out;
}

void ContentionMeter::start() { begin_ = sample(); }

double ContentionMeter::others_cores() const {
  Sample end = sample();
  if (begin_.busy_s < 0 || end.busy_s < 0) return -1;
  double elapsed = std::chrono::duration<double>(end.at - begin_.at).count();
  if (elapsed <= 0) return 0;
  double others = (end.busy_s - begin_.busy_s) - (end.self_s - begin_.self_s);
  return std::max(0.0, others / elapsed);
}

double ContentionMeter::steal_cores() const {
  Sample end = sample();
  double elapsed = std::chrono::duration<double>(end.at - begin_.at).count();
  if (begin_.busy_s < 0 || end.busy_s < 0 || elapsed <= 0) return 0;
  return std::max(0.0, (end.steal_s - begin_.steal_s) / elapsed);
}

}  // namespace kforge::harness
