// Waiting for a quiet moment before a check that may time a kernel: a generation on a busy
// machine waits (bounded by its own allowance and budget, never forever) for other
// processes to leave the CPU, and says how long it waited. Test: ctest -R jobs_quiet_window_test
// (and jobs_generate_test, GenerateJob.BusyMachine...).
#pragma once

#include <functional>

namespace kforge::jobs {

//! Cores other processes used during one probe of `seconds` (-1: unknown). The default
//! (a null function) is harness::ContentionMeter over a sleep of that length.
using ContentionProbe = std::function<double(double seconds)>;

//! What one wait found.
struct QuietWait {
  double waited_s = 0;       //!< seconds spent probing
  bool quiet = false;        //!< a probe saw at most max_contention cores used by others
  double others_cores = -1;  //!< the last probe's reading
};

//! Probes in windows of `probe_s` until one sees others using at most `max_contention`
//! cores (or an unknown amount), `max_wait_s` has passed (the last probe is shortened to
//! fit), or `stop()` is true. max_wait_s <= 0: no probe, not quiet.
QuietWait wait_for_quiet(double max_wait_s, double max_contention, const std::function<bool()>& stop,
                         const ContentionProbe& probe = {}, double probe_s = 0.25);

//! Process-wide memory of a busy spell: true when a wait that found no quiet window ended
//! less than `spell_s` ago. Waiting again then would only repeat it (a queue of cached
//! generations on a loaded machine would each wait out its allowance), so callers skip.
bool in_busy_spell(double spell_s);
//! Records that a wait just ended without finding a quiet window.
void note_busy_spell();

//! A generation's quiet-window allowance: the seconds it may spend waiting across all its
//! checks, min(KFORGE_QUIET_WAIT_S (default 10; 0 = never wait), a quarter of its budget).
double quiet_wait_allowance_s(double time_budget_s);

}  // namespace kforge::jobs
