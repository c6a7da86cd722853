// What every API handler may use: the database pool, the metrics registry and
// limits. Owned by the server's main; handlers receive it by reference.
// Test: every route test, e.g. ctest -R 'api_(core|resources)_test'.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "api/metrics.h"
#include "api/response_cache.h"
#include "db/connection.h"

namespace kforge::api {

//! Shared state and settings for the v1 handlers.
struct ApiContext {
  db::ConnectionPool* pool = nullptr;  //!< request-handling connections
  Metrics* metrics = nullptr;          //!< /metrics registry
  std::string web_dir;                 //!< static UI folder
  std::string models_dir;              //!< root under which model files may be served
  size_t max_body_bytes = 1 << 20;     //!< request body limit (also enforced by the adapter)
  double probe_wall_seconds = 20;         //!< wall limit of the sample run of a submitted op
  int64_t probe_memory_bytes = int64_t{2} << 30;  //!< memory limit (RLIMIT_DATA) of that run
  int max_concurrent_probes = 2;          //!< more at once get 503 + Retry-After
  ResponseCache* leaderboard_cache = nullptr;  //!< public leaderboard pages (may be null)
};

}  // namespace kforge::api
