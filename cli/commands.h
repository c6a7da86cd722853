// The kforge CLI's commands, each a function from parsed flags to an exit code:
// op submit, generate (--wait: progress bar, then kernel and speedup), jobs list,
// train sft|grpo, leaderboard, demo (a few suite ops at once), health, ready. Tested in
// tests/cli/cli_test.cpp.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "cli/client.h"
#include "common/config.h"

namespace kforge::cli {

//! The flag table shared by every command (help text lists them all).
std::vector<FlagSpec> cli_flags();

//! Runs the command named by the positional arguments; writes results to out and
//! problems to err. Returns the process exit code (0 ok, 1 failed, 2 usage).
int run_command_line(const Flags& flags, Client& client, std::ostream& out, std::ostream& err);

}  // namespace kforge::cli
