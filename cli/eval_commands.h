// `kforge eval`: start an evaluation (model version x suite, settings as key=value,
// --wait to follow it), show one (metrics with 95% intervals, the per-op table), and
// compare two (per-op deltas, the paired interval of the difference, whether the two
// models' intervals overlap). Tested in tests/cli/cli_test.cpp and jobs_training_test.
#pragma once

#include <iosfwd>

#include "cli/client.h"
#include "common/config.h"

namespace kforge::cli {

//! `kforge eval start|show|compare ...`; the exit code (0 ok, 1 failed, 2 usage).
int eval_command(const Flags& flags, Client& client, std::ostream& out, std::ostream& err);

}  // namespace kforge::cli
