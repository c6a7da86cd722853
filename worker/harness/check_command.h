// `kforge-worker check op.json kernel.cl`: one-off check of a kernel program
// against an op, printing the result JSON. Test: ctest -R harness_check_command.
#pragma once

namespace kforge::harness {

//! Runs the check subcommand; argv[0] is "check". Exit status: 0 correct, 1 any other
//! outcome, 2 usage or op errors.
int check_command(int argc, char** argv);

}  // namespace kforge::harness
