// kforge: command-line client for the REST API. KFORGE_URL (default
// http://127.0.0.1:8080) and KFORGE_TOKEN configure it. `kforge --help` lists commands;
// ctest -R cli_test runs them against a real server.
//   kforge op submit op.json
//   kforge generate --op op.json --wait
#include <iostream>

#include "cli/client.h"
#include "cli/commands.h"
#include "common/config.h"

int main(int argc, char** argv) {
  kforge::Flags flags(kforge::cli::cli_flags());
  if (auto error = flags.parse(argc, argv)) {
    std::cerr << "kforge: " << *error << "\n";
    return 2;
  }
  kforge::cli::Client client(flags.get("url"), flags.get("token"));
  return kforge::cli::run_command_line(flags, client, std::cout, std::cerr);
}
