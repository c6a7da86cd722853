// wait_for_quiet and the quiet-wait allowance (worker/jobs/quiet_window.h): with scripted
// contention readings, then once against the real /proc/stat meter.
// ctest -R jobs_quiet_window_test
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <thread>
#include <vector>

#include "worker/jobs/quiet_window.h"

using kforge::jobs::quiet_wait_allowance_s;
using kforge::jobs::wait_for_quiet;

TEST(QuietWindow, StopsAtTheFirstQuietProbe) {
  std::vector<double> readings = {2.0, 1.5, 0.1, 3.0};
  size_t probes = 0;
  auto wait = wait_for_quiet(10, 0.25, {}, [&](double) { return readings.at(probes++); });
  EXPECT_TRUE(wait.quiet);
  EXPECT_EQ(probes, 3u);
  EXPECT_DOUBLE_EQ(wait.others_cores, 0.1);
  EXPECT_LT(wait.waited_s, 1.0);
}

TEST(QuietWindow, ABusyMachineEndsTheWaitAtItsLimitNotLater) {
  double probed_s = 0;
  auto busy = [&](double seconds) {
    probed_s += seconds;
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    return 1.8;
  };
  auto wait = wait_for_quiet(0.35, 0.25, {}, busy, 0.1);
  EXPECT_FALSE(wait.quiet);
  EXPECT_DOUBLE_EQ(wait.others_cores, 1.8);
  EXPECT_GE(wait.waited_s, 0.33);
  EXPECT_LT(wait.waited_s, 0.6) << "the last probe is shortened to fit the limit";
  EXPECT_LE(probed_s, 0.35 + 1e-9);
}

TEST(QuietWindow, StopAndZeroLimitProbeNothing) {
  int probes = 0;
  auto count = [&](double) { return ++probes, 5.0; };
  EXPECT_FALSE(wait_for_quiet(10, 0.25, [] { return true; }, count).quiet);
  EXPECT_FALSE(wait_for_quiet(0, 0.25, {}, count).quiet);
  EXPECT_EQ(probes, 0);
}

TEST(QuietWindow, UnknownContentionCountsAsQuiet) {
  EXPECT_TRUE(wait_for_quiet(10, 0.25, {}, [](double) { return -1.0; }).quiet);
}

TEST(QuietWindow, TheRealMeterReadsTheMachine) {
  auto wait = wait_for_quiet(5, 1e9, {}, {}, 0.2);  // any reading is "quiet" here
  EXPECT_TRUE(wait.quiet);
  EXPECT_GE(wait.waited_s, 0.19);
  EXPECT_LT(wait.waited_s, 2.0);
  EXPECT_GE(wait.others_cores, -1.0);
}

TEST(QuietWindow, AllowanceIsTheSmallerOfTheSettingAndAQuarterOfTheBudget) {
  unsetenv("KFORGE_QUIET_WAIT_S");
  EXPECT_DOUBLE_EQ(quiet_wait_allowance_s(600), 10);
  EXPECT_DOUBLE_EQ(quiet_wait_allowance_s(20), 5);
  setenv("KFORGE_QUIET_WAIT_S", "3", 1);
  EXPECT_DOUBLE_EQ(quiet_wait_allowance_s(600), 3);
  setenv("KFORGE_QUIET_WAIT_S", "0", 1);
  EXPECT_DOUBLE_EQ(quiet_wait_allowance_s(600), 0);
  unsetenv("KFORGE_QUIET_WAIT_S");
}

TEST(QuietWindow, ABusySpellIsRememberedForItsLength) {
  using kforge::jobs::in_busy_spell;
  kforge::jobs::note_busy_spell();
  EXPECT_TRUE(in_busy_spell(60));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(in_busy_spell(0.01)) << "a spell ends";
}
