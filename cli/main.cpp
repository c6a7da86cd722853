// kforge: command-line client for the REST API. KFORGE_URL (default
// http://127.0.0.1:8080) and KFORGE_TOKEN configure it.
//   kforge health
#include <iostream>

#include "cli/client.h"
#include "common/config.h"

int main(int argc, char** argv) {
  kforge::Flags flags({
      {"url", "KFORGE_URL", "http://127.0.0.1:8080", "server base URL"},
      {"token", "KFORGE_TOKEN", "", "API token (Bearer)"},
  });
  if (auto error = flags.parse(argc, argv)) {
    std::cerr << "kforge: " << *error << "\n";
    return 2;
  }
  if (flags.help_requested() || flags.positional().empty()) {
    std::cout << flags.usage("kforge <command>", "commands: health, ready");
    return flags.help_requested() ? 0 : 2;
  }
  const std::string& command = flags.positional()[0];
  if (command != "health" && command != "ready") {
    std::cerr << "kforge: unknown command '" << command << "' (see --help)\n";
    return 2;
  }
  try {
    kforge::cli::Client client(flags.get("url"), flags.get("token"));
    auto resp = client.request("GET", "/v1/" + command);
    std::cout << resp.body << "\n";
    return resp.status == 200 ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "kforge: " << e.what() << "\n";
    return 1;
  }
}
