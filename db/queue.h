// The PostgreSQL job queue: insert, list and cancel jobs (server side); claim,
// heartbeat, complete, fail, release and rescue them (worker side). SQL in
// db/queries/jobs.sql, schema in db/migrations/002_jobs.sql, design in docs/queue.md.
// Tests: scripts/test.sh build -R queue
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <pqxx/pqxx>

namespace kforge::db {

//! Where a job is in its life. completed, failed, cancelled and discarded are terminal.
enum class JobState { available, scheduled, running, retryable, completed, failed, cancelled, discarded };

//! "available", "running", ...
std::string to_string(JobState state);
//! Parses a state name; throws std::invalid_argument naming the bad value.
JobState job_state_from_string(const std::string& name);
//! True for completed, failed, cancelled and discarded.
bool job_state_is_terminal(JobState state);

//! NOTIFY channel that wakes idle workers; the payload is the queue name.
inline constexpr const char* kJobsChannel = "kforge_jobs";
//! NOTIFY channel that tells a worker to stop a running job; the payload is its id.
inline constexpr const char* kJobCancelChannel = "kforge_job_cancel";

//! A job to insert. kind and queue: lower-case [a-z][a-z0-9_.-]*, at most 63 chars.
struct JobInsert {
  std::string kind;
  std::string queue = "default";
  int priority = 2;                //!< 0 (most urgent) .. 9
  std::string args_json = "{}";   //!< any JSON value, usually an object
  int max_attempts = 3;            //!< 1 .. 1000
  double delay_seconds = 0;        //!< > 0: state scheduled until then
  std::string idempotency_key;     //!< empty = none; unique among unfinished jobs
  std::vector<std::string> required_tags;  //!< capability tags its worker must have ("target:triton"); empty = any
};

//! A job row as the queue returns it.
struct Job {
  int64_t id = 0;
  std::string kind, queue;
  JobState state = JobState::available;
  int priority = 2;
  std::string args_json, progress_json;
  std::string result_json;  //!< "null" until completed
  std::string errors_json;  //!< JSON array, one object per failed attempt
  int attempt = 0, max_attempts = 0;
  //! ISO-8601 UTC ("2026-11-22T08:00:00.123456Z"), "" when null.
  std::string scheduled_at, attempted_at, finished_at, created_at;
  std::optional<int64_t> worker_id;  //!< the worker running it, or that last ran it
  std::string idempotency_key;        //!< "" when none
  bool cancel_requested = false;      //!< someone asked to cancel it
  std::string lease_expires_at;       //!< ISO-8601 UTC while running, else ""
  std::vector<std::string> required_tags;  //!< capability tags a worker needs to claim it
};

//! What job_insert did.
struct InsertResult {
  Job job;        //!< the new job, or the in-flight job that already had the key
  bool inserted;  //!< false when an unfinished job with the same key existed
};

//! Inserts one job and NOTIFYs its queue (on commit). Throws std::invalid_argument
//! for bad fields (naming the field).
InsertResult job_insert(pqxx::connection& conn, const JobInsert& job);
//! Same, inside the caller's transaction (the job exists only if it commits).
InsertResult job_insert(pqxx::transaction_base& txn, const JobInsert& job);

//! Inserts many jobs in batched statements, one transaction; returns ids in input
//! order. A job whose key is already in flight is not inserted: its position holds
//! the existing job's id.
std::vector<int64_t> job_insert_many(pqxx::connection& conn, const std::vector<JobInsert>& jobs);

//! The job, or nullopt if no job has that id.
std::optional<Job> job_get(pqxx::connection& conn, int64_t id);

//! Filter and cursor for job_list.
struct JobFilter {
  std::string kind;               //!< "" = every kind
  std::optional<JobState> state;  //!< nullopt = every state
  int64_t after_id = 0;           //!< cursor: jobs with id < after_id (newest first); 0 = start
  int limit = 20;                 //!< 1 .. 1000
};

//! Jobs newest first (id descending). Next page: after_id = last job's id.
std::vector<Job> job_list(pqxx::connection& conn, const JobFilter& filter);

//! What job_cancel did.
enum class CancelResult {
  cancelled,         //!< it was waiting: now cancelled
  cancel_requested,  //!< it is running: its worker is told and stops at its next checkpoint
  already_finished,  //!< it was already in a terminal state
  not_found
};
//! "cancelled", "cancel_requested", ...
std::string to_string(CancelResult result);

//! Cancels a job: at once when waiting, cooperatively (NOTIFY) when running.
CancelResult job_cancel(pqxx::connection& conn, int64_t id);

//! Pauses a queue: claims skip it until queue_resume. Running jobs continue.
void queue_pause(pqxx::connection& conn, const std::string& queue);
//! Resumes a paused queue and wakes its workers.
void queue_resume(pqxx::connection& conn, const std::string& queue);
//! True while the queue is paused.
bool queue_is_paused(pqxx::connection& conn, const std::string& queue);

//! Deletes up to `limit` jobs that finished more than `retention_seconds` ago;
//! returns how many.
int64_t job_prune(pqxx::connection& conn, double retention_seconds, int limit = 10000);

// ---- Worker side -----------------------------------------------------------

//! Identifies one claim of a job: only the worker holding (job, attempt) may
//! heartbeat, complete, fail or release it.
struct JobLease {
  int64_t job_id = 0;
  int64_t worker_id = 0;
  int attempt = 0;
};
//! The lease of a job as claimed (worker_id and attempt from the row).
JobLease job_lease(const Job& job);

//! What to claim.
struct ClaimRequest {
  std::string queue = "default";
  int64_t worker_id = 0;
  int limit = 1;                   //!< batch size, 1 .. 10000
  double lease_seconds = 30;       //!< the claim lapses unless extended before then
  std::vector<std::string> kinds;  //!< only these kinds; empty = any
  std::vector<std::string> capabilities;  //!< this worker's tags: only jobs requiring a subset
};

//! Claims up to `limit` due jobs in (priority, scheduled_at, id) order with one
//! statement (FOR UPDATE SKIP LOCKED); they come back running, attempt + 1.
//! Nothing from a paused queue.
std::vector<Job> job_claim(pqxx::connection& conn, const ClaimRequest& request);

//! Seconds until the next pending job of the queue is due (<= 0: due now), or
//! nullopt when none is pending.
std::optional<double> job_next_due(pqxx::connection& conn, const std::string& queue,
                                   const std::vector<std::string>& kinds = {},
                                   const std::vector<std::string>& capabilities = {});

//! A SQL text[] literal of capability tags ("{target:triton,device:gpu}"); throws
//! std::invalid_argument for a tag outside [a-z0-9_.:-].
std::string capability_array(const std::vector<std::string>& tags);
//! Parses a text[] column's text form ("{a,b}") into its elements (tags need no quoting).
std::vector<std::string> parse_text_array(const std::string& text);

//! Result of a heartbeat.
struct HeartbeatResult {
  bool lease_held = false;        //!< false: the job was rescued or finished; stop working on it
  bool cancel_requested = false;  //!< true: stop at the next checkpoint and call job_cancelled
};

//! Extends the lease and, if progress_json is not empty, stores the progress.
HeartbeatResult job_heartbeat(pqxx::connection& conn, const JobLease& lease, double lease_seconds,
                              const std::string& progress_json = "");

//! Extends many leases of one worker in one statement; returns, per lease (same
//! order), whether it is still held and whether cancellation was requested.
std::vector<HeartbeatResult> job_extend_leases(pqxx::connection& conn, int64_t worker_id,
                                               const std::vector<JobLease>& leases, double lease_seconds);

//! A side effect written in the completion's transaction (e.g. a results row).
using CompleteHook = std::function<void(pqxx::transaction_base& txn)>;

//! Completes a job if the lease is still ours, running `hook` in the same
//! transaction. Returns false (and runs no hook) when the lease was lost.
//! A non-empty progress_json is stored as the final progress.
bool job_complete(pqxx::connection& conn, const JobLease& lease, const std::string& result_json,
                  const CompleteHook& hook = {}, const std::string& progress_json = "");

//! One completion in a batch.
struct Completion {
  JobLease lease;
  std::string result_json = "null";
  CompleteHook hook;          //!< may be empty
  std::string progress_json;  //!< final progress; "" = unchanged
};

//! Completes a batch of one worker's jobs in one transaction and one UPDATE; runs
//! each completed job's hook in that transaction. Returns, per completion (same
//! order), whether it completed (false: lease lost). If a hook throws, the batch
//! rolls back and the exception propagates.
std::vector<bool> job_complete_many(pqxx::connection& conn, int64_t worker_id,
                                    const std::vector<Completion>& completions);

//! Retry delay: min(cap, base * 2^(attempt-1)), times 1 +- jitter (uniform).
struct BackoffPolicy {
  double base_seconds = 1;
  double cap_seconds = 3600;
  double jitter = 0.1;  //!< 0 .. 1
};

//! What job_fail did.
struct FailResult {
  bool lease_held = false;                 //!< false: nothing changed (lease lost)
  JobState state = JobState::retryable;    //!< retryable, discarded (attempts used up) or failed
  double retry_in_seconds = 0;             //!< when retryable: delay before the next attempt
};

//! Records a failed attempt (kept in errors). Retryable errors retry with backoff
//! while attempts remain, then the job is discarded; others fail it at once.
FailResult job_fail(pqxx::connection& conn, const JobLease& lease, const std::string& error, bool retryable,
                    const BackoffPolicy& backoff = {});

//! The worker stopped a job whose cancellation was requested: state cancelled.
bool job_cancelled(pqxx::connection& conn, const JobLease& lease, const std::string& message = "stopped by worker");

//! Gives a running job back (graceful shutdown): available again and the attempt
//! does not count; cancelled instead if cancellation was requested.
bool job_release(pqxx::connection& conn, const JobLease& lease);

//! What one rescue pass did.
struct RescueResult {
  bool elected = false;  //!< false: another process held the maintenance lock; nothing done
  int retried = 0, discarded = 0, cancelled = 0;
};

//! Returns running jobs whose lease lapsed to retryable (with backoff), or to
//! discarded when attempts are used up, or to cancelled if cancellation was
//! requested. Only one process at a time does it (advisory lock); the others get
//! elected = false.
RescueResult job_rescue(pqxx::connection& conn, const BackoffPolicy& backoff = {}, int limit = 1000);

//! A Postgres text array literal for a list of ids ("{1,2,3}").
std::string sql_bigint_array(const std::vector<int64_t>& values);

}  // namespace kforge::db
