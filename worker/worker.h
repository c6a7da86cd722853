// The worker process: registers in `workers`, claims jobs from the PostgreSQL
// queue into N slots, runs each through the handler registered for its kind,
// heartbeats leases, completes/fails/cancels, rescues lapsed jobs, survives
// database restarts and stops gracefully on SIGTERM. Design: docs/queue.md.
// Tests: tests/worker/*_test.cpp (scripts/test.sh build -R worker_).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "db/queue.h"

namespace kforge::worker {

//! Settings for one worker process (flags: worker/worker_flags.h).
struct WorkerOptions {
  std::string database_url;
  std::string device;                     //!< description stored in the workers row
  std::vector<std::string> capabilities;  //!< tags it claims by (target:opencl, device:gpu...); jobs need a subset
  int slots = 1;                          //!< jobs run at once (one thread each)
  double heartbeat_seconds = 5;           //!< workers row heartbeat
  std::string queue = "default";          //!< the queue this worker claims from
  double lease_seconds = 30;              //!< a claim lapses unless extended (every lease/3)
  double poll_seconds = 5;                //!< claim at least this often when no NOTIFY arrives
  int claim_batch = 0;                    //!< jobs per claim; 0 = as many as free slots
  int complete_batch = 1000;              //!< completions per transaction; 1 = one each
  double progress_seconds = 1;            //!< how often reported progress is saved
  double rescue_seconds = 5;              //!< how often to try to rescue lapsed jobs
  double prune_retention_seconds = 7 * 86400;  //!< finished jobs older than this are deleted; 0 = never
  double shutdown_grace_seconds = 30;     //!< SIGTERM: let running jobs finish this long, then stop them
  double dead_after_seconds = 60;         //!< workers silent this long are marked dead (by the elected maintainer)
  db::BackoffPolicy backoff;              //!< retry delays for failed and rescued jobs
};

//! Why a running job is asked to stop.
enum class StopReason { none, cancel_requested, lease_lost, shutdown };

//! What a handler sees of its job: arguments, progress, cancellation.
class JobContext {
 public:
  explicit JobContext(db::Job job) : job_(std::move(job)) {}

  //! The job row as claimed (id, kind, attempt, args...).
  const db::Job& job() const { return job_; }
  //! The job's arguments as JSON text.
  const std::string& args_json() const { return job_.args_json; }
  //! 1 on the first try.
  int attempt() const { return job_.attempt; }

  //! Saves progress (JSON text) with the next progress heartbeat (progress_seconds) or
  //! the completion. Throws std::invalid_argument if it is not valid JSON.
  void report_progress(const std::string& progress_json);
  //! True once the job should stop at its next checkpoint (see stop_reason()).
  bool cancelled() const { return stop_reason_.load() != StopReason::none; }
  //! Why it should stop: cancel requested, lease lost, or the worker is shutting down.
  StopReason stop_reason() const { return stop_reason_.load(); }
  //! Sleeps up to `seconds`, returning false early if the job is told to stop.
  bool sleep_for(double seconds) const;
  //! Registers a side effect to run in the completion's transaction (only if the
  //! job really completes under this lease).
  void on_complete(db::CompleteHook hook);

  // Used by the worker loop.
  //! Asks the job to stop (first reason wins).
  void request_stop(StopReason reason);
  //! Takes the progress reported since the last call ("" when none).
  std::string take_progress();
  //! The hooks registered with on_complete.
  std::vector<db::CompleteHook> take_hooks();

 private:
  db::Job job_;
  std::atomic<StopReason> stop_reason_{StopReason::none};
  mutable std::mutex mutex_;
  std::string pending_progress_;
  std::vector<db::CompleteHook> hooks_;
};

//! How a handler's run ended.
struct JobOutcome {
  bool success = true;
  std::string result_json = "{}";  //!< on success
  std::string error;               //!< on failure: kept in the job's errors
  bool retryable = true;           //!< on failure: retry with backoff while attempts remain

  //! The job is done; result stored as the job's result.
  static JobOutcome complete(std::string result_json = "{}") { return {true, std::move(result_json), "", false}; }
  //! The attempt failed. Not retryable: the job fails at once.
  static JobOutcome fail(std::string error, bool retryable = true) { return {false, "null", std::move(error), retryable}; }
};

//! Runs one job. Exceptions are caught and recorded as retryable failures.
using JobHandler = std::function<JobOutcome(JobContext&)>;

//! kind -> handler. The worker claims only the kinds registered here.
class HandlerRegistry {
 public:
  //! Registers (or replaces) the handler for a kind ([a-z][a-z0-9_.-]*).
  void add(const std::string& kind, JobHandler handler);
  //! The handler for a kind, or nullptr.
  const JobHandler* find(const std::string& kind) const;
  //! Registered kinds, sorted.
  std::vector<std::string> kinds() const;

 private:
  std::map<std::string, JobHandler> handlers_;
};

//! A registry with the built-in kinds (`noop`: see worker/builtin_jobs.cpp).
HandlerRegistry default_registry();

//! Registers the built-in kinds into `registry`.
void register_builtin_jobs(HandlerRegistry& registry);

//! Runs until `stop` becomes true: register, claim and run jobs, heartbeat,
//! reconnect after a database outage, shut down gracefully, mark the row
//! stopped. Returns an exit code.
int run_worker(const WorkerOptions& options, const HandlerRegistry& registry, const std::atomic<bool>& stop);

//! Same with default_registry().
int run_worker(const WorkerOptions& options, const std::atomic<bool>& stop);

}  // namespace kforge::worker
