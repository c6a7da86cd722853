// kforge-worker: claims jobs from PostgreSQL and runs them. Thin: parses flags
// and wires the pieces. Subcommands that need no database work in every build:
//   kforge-worker [run]     register, heartbeat, run jobs (needs KFORGE_WITH_SERVER)
//   kforge-worker devices   list OpenCL devices
//   kforge-worker check op.json kernel.cl   check one kernel program (docs/harness.md)
#include <signal.h>

#include <atomic>
#include <iostream>

#include "common/config.h"
#include "common/log.h"
#include "common/version.h"
#include "worker/harness/devices.h"
#include "worker/harness/check_command.h"
#ifdef KFORGE_WITH_SERVER
#include "worker/worker.h"
#endif

namespace {

std::atomic<bool> g_stop{false};

void on_stop_signal(int) { g_stop = true; }

int list_devices_command() {
  auto devices = kforge::harness::list_devices();
  if (devices.empty()) {
    std::cout << "no OpenCL devices (is an ICD such as pocl-opencl-icd installed?)\n";
    return 1;
  }
  for (const auto& d : devices) {
    std::cout << d.platform << " | " << d.name << " | " << d.version << " | driver " << d.driver_version << " | "
              << d.compute_units << " compute units" << (d.is_gpu ? " | GPU" : "") << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "check") return kforge::harness::check_command(argc - 1, argv + 1);
  kforge::Flags flags({
      {"database-url", "KFORGE_DATABASE_URL", "", "PostgreSQL URL (default: the embedded cluster's)"},
      {"slots", "KFORGE_WORKER_SLOTS", "1", "jobs run at once"},
      {"heartbeat-s", "KFORGE_HEARTBEAT_S", "5", "seconds between heartbeats"},
      {"log-level", "KFORGE_LOG_LEVEL", "info", "debug, info, warn or error"},
  });
  if (auto error = flags.parse(argc, argv)) {
    std::cerr << "kforge-worker: " << *error << "\n";
    return 2;
  }
  if (flags.help_requested()) {
    std::cout << flags.usage("kforge-worker [run|devices]", "kforge worker " KFORGE_VERSION);
    return 0;
  }
  kforge::log_set_level(flags.get("log-level"));
  std::string command = flags.positional().empty() ? "run" : flags.positional()[0];
  if (command == "devices") return list_devices_command();
  if (command != "run") {
    std::cerr << "kforge-worker: unknown command '" << command << "' (see --help)\n";
    return 2;
  }
#ifdef KFORGE_WITH_SERVER
  signal(SIGINT, on_stop_signal);
  signal(SIGTERM, on_stop_signal);
  kforge::worker::WorkerOptions options;
  options.database_url = flags.get("database-url").empty() ? kforge::database_url() : flags.get("database-url");
  if (options.database_url.empty()) {
    std::cerr << "kforge-worker: no database: set KFORGE_DATABASE_URL or start the embedded one (scripts/pg.sh start)\n";
    return 2;
  }
  try {
    options.slots = flags.get_int("slots");
    options.heartbeat_seconds = flags.get_double("heartbeat-s");
  } catch (const std::exception& e) {
    std::cerr << "kforge-worker: " << e.what() << "\n";
    return 2;
  }
  options.device = kforge::harness::describe_devices(kforge::harness::list_devices());
  return kforge::worker::run_worker(options, g_stop);
#else
  std::cerr << "kforge-worker: 'run' needs a build with KFORGE_WITH_SERVER=ON; this build has only standalone commands\n";
  return 2;
#endif
}
