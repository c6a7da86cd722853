// kforge-worker: claims jobs from PostgreSQL and runs them. Thin: parses flags
// and wires the pieces. Subcommands that need no database work in every build:
//   kforge-worker [run]     register, heartbeat, run jobs (needs KFORGE_WITH_SERVER)
//   kforge-worker devices   list OpenCL and CUDA devices and the capability tags they give
//   kforge-worker check op.json kernel.cl   check one kernel program (docs/harness.md)
#include <signal.h>

#include <atomic>
#include <iostream>

#include "common/config.h"
#include "common/log.h"
#include "common/version.h"
#include "worker/harness/host_devices.h"
#include "worker/harness/check_command.h"
#ifdef KFORGE_WITH_SERVER
#include "worker/worker.h"
#include "worker/worker_flags.h"
#ifdef KFORGE_WITH_GENERATE
#include "worker/jobs/generate.h"
#include "worker/jobs/training_jobs.h"
#endif
#endif

namespace {

std::atomic<bool> g_stop{false};

void on_stop_signal(int) { g_stop = true; }

// Lists devices as a child sees them (this process never initialises OpenCL or CUDA).
int list_devices_command() {
  auto host = kforge::harness::probe_host_devices();
  if (host.opencl.empty()) std::cout << "no OpenCL devices (is an ICD such as pocl-opencl-icd installed?)\n";
  for (const auto& d : host.opencl) {
    std::cout << d.platform << " | " << d.name << " | " << d.version << " | driver " << d.driver_version << " | "
              << d.compute_units << " compute units" << (d.is_gpu ? " | GPU" : "") << "\n";
  }
  for (const auto& name : host.cuda) std::cout << "CUDA | " << name << "\n";
  if (host.cuda.empty()) std::cout << "no CUDA device: " << host.cuda_note << "\n";
  std::cout << "triton: " << (host.triton ? "yes" : "no") << (host.triton_note.empty() ? "" : " (" + host.triton_note + ")")
            << "\ncapabilities:";
  for (const auto& tag : kforge::harness::capabilities_of(host)) std::cout << " " << tag;
  std::cout << "\n";
  return host.opencl.empty() && host.cuda.empty() ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "check") return kforge::harness::check_command(argc - 1, argv + 1);
  std::vector<kforge::FlagSpec> specs = {
      {"database-url", "KFORGE_DATABASE_URL", "", "PostgreSQL URL (default: the embedded cluster's)"},
      {"slots", "KFORGE_WORKER_SLOTS", "1", "jobs run at once"},
      {"heartbeat-s", "KFORGE_HEARTBEAT_S", "5", "seconds between heartbeats"},
      {"log-level", "KFORGE_LOG_LEVEL", "info", "debug, info, warn or error"},
  };
#ifdef KFORGE_WITH_SERVER
  for (auto& spec : kforge::worker::worker_flag_specs()) specs.push_back(spec);  // queue flags
#endif
  kforge::Flags flags(specs);
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
    kforge::worker::apply_worker_flags(flags, options);
  } catch (const std::exception& e) {
    std::cerr << "kforge-worker: " << e.what() << "\n";
    return 2;
  }
  // Devices are found in a child: a worker that initialised OpenCL would start sandboxes
  // that see only PoCL, and a CUDA context must never live in the worker.
  // --capabilities skips the probe (it imports torch and triton on a GPU host: seconds).
  if (flags.get("capabilities").empty()) {
    auto host = kforge::harness::probe_host_devices();
    options.device = kforge::harness::describe_host(host);
    options.capabilities = kforge::harness::capabilities_of(host);
  } else {
    options.capabilities = kforge::worker::split_tags(flags.get("capabilities"));
    options.device = "capabilities set with --capabilities";
  }
  kforge::worker::HandlerRegistry registry = kforge::worker::default_registry();
#ifdef KFORGE_WITH_GENERATE
  try {
    // Model files of versions trained elsewhere: KFORGE_SERVER_URL, KFORGE_TOKEN, KFORGE_MODEL_CACHE.
    auto training = kforge::jobs::TrainingJobOptions::from_env(options.database_url);
    // KFORGE_INDUCTOR_CANDIDATES=off: no TorchInductor candidate in triton generations on a GPU.
    // KFORGE_CHILD_POOL: children pre-started per kind (default 2; 0: none).
    auto generate_options = kforge::jobs::GenerateOptions::from_env();
    generate_options.capabilities = options.capabilities;
    kforge::jobs::register_generate_job(registry, options.database_url, training.model_files, generate_options);
    kforge::jobs::register_training_jobs(registry, training);
  } catch (const std::exception& e) {
    std::cerr << "kforge-worker: " << e.what() << "\n";
    return 2;
  }
#endif
  return kforge::worker::run_worker(options, registry, g_stop);
#else
  std::cerr << "kforge-worker: 'run' needs a build with KFORGE_WITH_SERVER=ON; this build has only standalone commands\n";
  return 2;
#endif
}
