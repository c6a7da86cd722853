// Flag table and validation behind worker/worker_flags.h.
// Test: scripts/test.sh build -R 'worker_(jobs|cluster)_test'.
#include "worker/worker_flags.h"

#include <stdexcept>

namespace kforge::worker {

std::vector<FlagSpec> worker_flag_specs() {
  return {
      {"queue", "KFORGE_WORKER_QUEUE", "default", "queue to claim jobs from"},
      {"lease-s", "KFORGE_LEASE_S", "30", "job lease; extended every third of it while the job runs"},
      {"poll-s", "KFORGE_POLL_S", "5", "claim at least this often without a NOTIFY"},
      {"claim-batch", "KFORGE_CLAIM_BATCH", "0", "jobs per claim (0 = as many as free slots)"},
      {"complete-batch", "KFORGE_COMPLETE_BATCH", "1000", "completions per transaction (1 = one each)"},
      {"rescue-s", "KFORGE_RESCUE_S", "5", "how often to rescue jobs whose lease lapsed"},
      {"prune-after-s", "KFORGE_PRUNE_AFTER_S", "604800", "delete finished jobs older than this (0 = never)"},
      {"shutdown-grace-s", "KFORGE_SHUTDOWN_GRACE_S", "30", "on SIGTERM, let running jobs finish this long"},
      {"dead-after-s", "KFORGE_DEAD_AFTER_S", "60", "mark workers dead that have not heartbeated for this long (0 = never)"},
      {"backoff-base-s", "KFORGE_BACKOFF_BASE_S", "1", "first retry delay; doubles per attempt"},
      {"backoff-cap-s", "KFORGE_BACKOFF_CAP_S", "3600", "longest retry delay"},
      {"capabilities", "KFORGE_WORKER_CAPABILITIES", "",
       "comma-separated tags to claim by (default: from the devices found: target:opencl,device:cpu...)"},
  };
}

std::vector<std::string> split_tags(const std::string& text) {
  std::vector<std::string> tags;
  std::string tag;
  for (char c : text + ",") {
    if (c == ',' || c == ' ') {
      if (!tag.empty()) tags.push_back(tag);
      tag.clear();
    } else {
      tag += c;
    }
  }
  return tags;
}

void apply_worker_flags(const Flags& flags, WorkerOptions& options) {
  auto positive = [&flags](const char* name, double min_value) {
    double value = flags.get_double(name);
    if (!(value >= min_value)) throw std::invalid_argument("--" + std::string(name) + " must be >= " + std::to_string(min_value));
    return value;
  };
  options.queue = flags.get("queue");
  bool queue_ok = !options.queue.empty() && options.queue.size() <= 63 && options.queue[0] >= 'a' && options.queue[0] <= 'z';
  for (char c : options.queue) {
    queue_ok = queue_ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-');
  }
  if (!queue_ok) throw std::invalid_argument("--queue '" + options.queue + "' is invalid: use [a-z][a-z0-9_.-]*");
  if (!(options.heartbeat_seconds > 0)) throw std::invalid_argument("--heartbeat-s must be > 0");
  options.lease_seconds = positive("lease-s", 0.1);
  options.poll_seconds = positive("poll-s", 0.01);
  options.claim_batch = static_cast<int>(positive("claim-batch", 0));
  options.complete_batch = static_cast<int>(positive("complete-batch", 1));
  options.rescue_seconds = positive("rescue-s", 0.05);
  options.prune_retention_seconds = positive("prune-after-s", 0);
  options.shutdown_grace_seconds = positive("shutdown-grace-s", 0);
  options.dead_after_seconds = positive("dead-after-s", 0);
  options.backoff.base_seconds = positive("backoff-base-s", 0);
  options.backoff.cap_seconds = positive("backoff-cap-s", 0);
  if (options.slots < 1 || options.slots > 1024) throw std::invalid_argument("--slots must be 1..1024");
}

}  // namespace kforge::worker
