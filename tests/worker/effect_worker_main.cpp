// kforge-effect-worker: the real worker loop (kforge_worker) plus one test kind,
// `effect`, whose completion writes a row into the test's side table
// effects(job_id, pid) in the same transaction as the completion. Tests count
// those rows to prove every job took effect exactly once.
//   kforge-effect-worker --database-url URL [--slots N --lease-s S ...]
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <iostream>

#include <nlohmann/json.hpp>

#include "common/config.h"
#include "common/log.h"
#include "worker/worker.h"
#include "worker/worker_flags.h"

namespace {

std::atomic<bool> g_stop{false};
void on_stop_signal(int) { g_stop = true; }

kforge::worker::JobOutcome run_effect(kforge::worker::JobContext& ctx) {
  auto args = nlohmann::json::parse(ctx.args_json(), nullptr, false);
  int sleep_ms = args.is_object() ? args.value("sleep_ms", 0) : 0;
  if (sleep_ms > 0 && !ctx.sleep_for(sleep_ms / 1000.0)) return kforge::worker::JobOutcome::fail("stopped");
  int64_t job_id = ctx.job().id;
  ctx.on_complete([job_id](pqxx::transaction_base& txn) {
    txn.exec_params0("INSERT INTO effects (job_id, pid) VALUES ($1, $2)", job_id, static_cast<int>(getpid()));
  });
  return kforge::worker::JobOutcome::complete(nlohmann::json{{"pid", getpid()}}.dump());
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<kforge::FlagSpec> specs = {
      {"database-url", "KFORGE_DATABASE_URL", "", "PostgreSQL URL"},
      {"slots", "KFORGE_WORKER_SLOTS", "1", "jobs run at once"},
      {"heartbeat-s", "KFORGE_HEARTBEAT_S", "5", "seconds between heartbeats"},
      {"log-level", "KFORGE_LOG_LEVEL", "info", "debug, info, warn or error"},
  };
  for (auto& spec : kforge::worker::worker_flag_specs()) specs.push_back(spec);
  kforge::Flags flags(specs);
  if (auto error = flags.parse(argc, argv)) {
    std::cerr << "kforge-effect-worker: " << *error << "\n";
    return 2;
  }
  kforge::log_set_level(flags.get("log-level"));
  kforge::worker::WorkerOptions options;
  options.database_url = flags.get("database-url");
  options.device = "test";
  try {
    options.slots = flags.get_int("slots");
    options.heartbeat_seconds = flags.get_double("heartbeat-s");
    kforge::worker::apply_worker_flags(flags, options);
  } catch (const std::exception& e) {
    std::cerr << "kforge-effect-worker: " << e.what() << "\n";
    return 2;
  }
  signal(SIGINT, on_stop_signal);
  signal(SIGTERM, on_stop_signal);
  kforge::worker::HandlerRegistry registry = kforge::worker::default_registry();
  registry.add("effect", run_effect);
  return kforge::worker::run_worker(options, registry, g_stop);
}
