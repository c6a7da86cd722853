// kforge-server: the REST API and web UI. Thin: parses flags, opens the
// database pool, applies migrations, wires the router to the HTTP adapter.
//   kforge-server [--port 8080]        serve
//   kforge-server migrate              apply migrations and exit
//   kforge-server token create --scope submit [--name NAME]   print a new API token
//   kforge-server models ship DIR      register the models shipped in DIR (first start of make run)
// Run: make run. Test: ctest -R 'server_system_test|api_core_test' (this binary over HTTP).
#include <signal.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <thread>

#include "api/auth.h"
#include "api/context.h"
#include "api/executor.h"
#include "api/model_dir.h"
#include "api/metrics.h"
#include "api/router.h"
#include "api/routes/routes.h"
#include "api/system_routes.h"
#include "common/config.h"
#include "common/sha256.h"
#include "common/log.h"
#include "common/version.h"
#include "db/connection.h"
#include "db/migrations.h"
#include "db/tokens.h"
#include "server/http_adapter.h"

namespace {

std::vector<kforge::FlagSpec> flag_specs() {
  return {
      {"host", "KFORGE_HOST", "127.0.0.1", "address to listen on"},
      {"port", "KFORGE_PORT", "8080", "HTTP port"},
      {"database-url", "KFORGE_DATABASE_URL", "", "PostgreSQL URL (default: the embedded cluster's)"},
      {"web-dir", "KFORGE_WEB_DIR", "web", "folder of the static web UI served at /"},
      {"vendor-dir", "KFORGE_VENDOR_DIR", "/usr/share/javascript",
       "Debian's browser libraries (libjs-chart.js, libjs-highlight.js), served at /vendor/"},
      {"max-body-bytes", "KFORGE_MAX_BODY_BYTES", "1048576", "request body limit"},
      {"db-pool-size", "KFORGE_DB_POOL_SIZE", "8", "database connections for request handling"},
      {"executor-threads", "KFORGE_EXECUTOR_THREADS", "0", "handler threads (0: one per pooled connection)"},
      {"max-queue", "KFORGE_MAX_QUEUE", "1024", "handler tasks that may wait before the server answers 503"},
      {"max-header-bytes", "KFORGE_MAX_HEADER_BYTES", "16384", "request header limit (431 above it)"},
      {"access-log", "KFORGE_ACCESS_LOG", "true", "log one line per request (true/false)", true},
      {"http-threads", "KFORGE_HTTP_THREADS", "0", "cpprestsdk's I/O and callback threads (0: two per CPU core, at least 4)"},
      {"models-dir", "KFORGE_MODELS_DIR", "", "directory of model versions (default: <data dir>/models)"},
      {"leaderboard-cache-ms", "KFORGE_LEADERBOARD_CACHE_MS", "1000", "how stale a leaderboard page may be (0: no cache)"},
      {"probe-timeout-s", "KFORGE_PROBE_TIMEOUT_S", "20", "wall/CPU limit of a submitted op's sample run"},
      {"probe-memory-mb", "KFORGE_PROBE_MEMORY_MB", "2048", "memory limit of a submitted op's sample run"},
      {"scope", "", "submit", "token create: scopes, comma-separated (submit, admin)"},
      {"name", "", "", "token create: a name to tell the token apart"},
      {"log-level", "KFORGE_LOG_LEVEL", "info", "debug, info, warn or error"},
  };
}

// Applies migrations, retrying every second until the database answers, so a
// server started before its database becomes ready once the database is up.
void migrate_until_done(const std::string& url, std::atomic<bool>& stopping) {
  while (!stopping) {
    try {
      auto conn = kforge::db::connect(url);
      kforge::db::migrate(*conn);
      return;
    } catch (const std::exception& e) {
      kforge::log_warn("server", "migrations not applied, retrying", {{"error", e.what()}});
    }
    for (int tick = 0; tick < 10 && !stopping; ++tick) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// `kforge-server token create --scope submit`: mints a token, stores its hash,
// prints the secret once on stdout.
int token_command(const std::vector<std::string>& args, const kforge::Flags& flags, const std::string& url) {
  if (args.size() != 2 || args[1] != "create") {
    std::cerr << "kforge-server: usage: kforge-server token create --scope submit|admin [--name NAME]\n";
    return 2;
  }
  std::vector<std::string> scopes;
  if (auto error = kforge::api::parse_scopes(flags.get("scope"), &scopes)) {
    std::cerr << "kforge-server token create: --scope: " << *error << "\n";
    return 2;
  }
  try {
    auto conn = kforge::db::connect(url);
    kforge::db::migrate(*conn);
    std::string secret = kforge::api::token_generate();
    kforge::db::token_insert(*conn, flags.get("name"), kforge::sha256_hex(secret), secret.substr(0, 8), scopes);
    std::cout << secret << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "kforge-server token create: " << e.what() << "\n";
    return 1;
  }
}

// `kforge-server models ship DIR`: every model directory under DIR becomes version 1 of
// its name unless that name has a version already (api/model_dir.h); one line per directory.
int models_command(const std::vector<std::string>& args, const std::string& url) {
  if (args.size() != 3 || args[1] != "ship") {
    std::cerr << "kforge-server: usage: kforge-server models ship DIR\n";
    return 2;
  }
  try {
    auto conn = kforge::db::connect(url);
    kforge::db::migrate(*conn);
    for (const auto& shipped : kforge::api::ship_models(*conn, args[2]))
      std::cout << shipped.action << " " << shipped.name << ": " << shipped.detail << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "kforge-server models ship: " << e.what() << "\n";
    return 1;
  }
}

// Slow or idle clients each hold a descriptor (cpprestsdk has no read timeout on
// Linux), so allow as many as the hard limit permits.
void raise_fd_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

// Deletes day-old Idempotency-Key records every 10 minutes (the key's promise
// lasts 24 h; without this the table would only grow).
void expire_idempotency_records(const std::string& url, std::atomic<bool>& stopping) {
  auto next = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!stopping) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (std::chrono::steady_clock::now() < next) continue;
    next = std::chrono::steady_clock::now() + std::chrono::minutes(10);
    try {
      auto conn = kforge::db::connect(url);
      int64_t removed = kforge::db::idempotency_expire(*conn);
      if (removed > 0) kforge::log_info("server", "expired idempotency records", {{"count", std::to_string(removed)}});
    } catch (const std::exception& e) {
      kforge::log_warn("server", "could not expire idempotency records", {{"error", e.what()}});
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  kforge::Flags flags(flag_specs());
  if (auto error = flags.parse(argc, argv)) {
    std::cerr << "kforge-server: " << *error << "\n";
    return 2;
  }
  if (flags.help_requested()) {
    std::cout << flags.usage("kforge-server [migrate | token create ... | models ship DIR]", "kforge REST API server " KFORGE_VERSION);
    return 0;
  }
  kforge::log_set_level(flags.get("log-level"));
  std::string url = flags.get("database-url").empty() ? kforge::database_url() : flags.get("database-url");
  if (url.empty()) {
    std::cerr << "kforge-server: no database: set KFORGE_DATABASE_URL or start the embedded one (scripts/pg.sh start)\n";
    return 2;
  }
  const auto& args = flags.positional();
  if (!args.empty() && args[0] == "migrate") {
    try {
      auto conn = kforge::db::connect(url);
      auto applied = kforge::db::migrate(*conn);
      std::cout << "applied " << applied.size() << " migration(s)\n";
      return 0;
    } catch (const std::exception& e) {
      std::cerr << "kforge-server migrate: " << e.what() << "\n";
      return 1;
    }
  }
  if (!args.empty() && args[0] == "token") return token_command(args, flags, url);
  if (!args.empty() && args[0] == "models") return models_command(args, url);
  if (!args.empty()) {
    std::cerr << "kforge-server: unknown command '" << args[0] << "' (see --help)\n";
    return 2;
  }

  // Block the stop signals before any thread starts so only sigwait sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // Every numeric flag is read here, so a typo is one clear message, not an abort.
  int port = 0, pool_flag = 0, threads_flag = 0, max_queue = 0, cache_ms = 0, probe_mb = 0;
  int max_body = 0, max_header = 0, http_threads = 0;
  double probe_s = 0;
  try {
    port = flags.get_int("port");
    pool_flag = flags.get_int("db-pool-size");
    threads_flag = flags.get_int("executor-threads");
    max_queue = flags.get_int("max-queue");
    cache_ms = flags.get_int("leaderboard-cache-ms");
    probe_mb = flags.get_int("probe-memory-mb");
    probe_s = flags.get_double("probe-timeout-s");
    max_body = flags.get_int("max-body-bytes");
    max_header = flags.get_int("max-header-bytes");
    http_threads = flags.get_int("http-threads");
  } catch (const std::exception& e) {
    std::cerr << "kforge-server: " << e.what() << "\n";
    return 2;
  }
  if (max_body < 1 || max_header < 1 || probe_s <= 0 || probe_mb < 64 || http_threads < 0 || http_threads > 1024) {
    std::cerr << "kforge-server: --max-body-bytes and --max-header-bytes must be positive, --probe-timeout-s > 0, "
                 "--probe-memory-mb >= 64, --http-threads 0 (default) to 1024\n";
    return 2;
  }
  raise_fd_limit();
  size_t pool_size = static_cast<size_t>(std::max(1, pool_flag));
  size_t threads = threads_flag > 0 ? static_cast<size_t>(threads_flag) : pool_size;
  kforge::db::ConnectionPool pool(url, pool_size);
  kforge::api::BoundedExecutor executor(threads, static_cast<size_t>(std::max(1, max_queue)));
  kforge::api::Metrics metrics;
  kforge::api::SystemState state;
  state.pool = &pool;
  state.web_dir = flags.get("web-dir");
  state.vendor_dir = flags.get("vendor-dir");
  kforge::api::ResponseCache leaderboard_cache(std::chrono::milliseconds(std::max(0, cache_ms)));
  kforge::api::ApiContext ctx;
  ctx.leaderboard_cache = &leaderboard_cache;
  ctx.pool = &pool;
  ctx.metrics = &metrics;
  ctx.web_dir = flags.get("web-dir");
  ctx.models_dir = flags.get("models-dir").empty() ? kforge::data_dir() + "/models" : flags.get("models-dir");
  ctx.max_body_bytes = static_cast<size_t>(max_body);
  ctx.probe_wall_seconds = probe_s;
  ctx.probe_memory_bytes = int64_t{probe_mb} << 20;
  kforge::api::Router router;
  kforge::api::add_system_routes(router, state);
  kforge::api::add_v1_routes(router, ctx);
  kforge::api::register_server_gauges(ctx, executor);

  kforge::server::HttpOptions options;
  options.host = flags.get("host");
  options.port = port;
  options.max_body_bytes = ctx.max_body_bytes;
  options.max_header_bytes = static_cast<size_t>(max_header);
  options.access_log = flags.get_bool("access-log");
  options.threads = http_threads;
  kforge::server::HttpServer http(router, executor, &metrics, options);
  try {
    http.start();
  } catch (const std::exception& e) {
    kforge::log_error("server", e.what());
    return 1;
  }

  std::atomic<bool> stopping{false};
  std::thread migrator([&] { migrate_until_done(url, stopping); });
  std::thread expirer([&] { expire_idempotency_records(url, stopping); });

  int signo = 0;
  sigwait(&stop_signals, &signo);
  kforge::log_info("server", "stopping", {{"signal", std::to_string(signo)}});
  stopping = true;
  http.stop();
  executor.stop();
  migrator.join();
  expirer.join();
  return 0;
}
