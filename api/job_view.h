// How jobs look through the API: one status vocabulary (queued, running,
// succeeded, failed, cancelled, retrying) for generations, training jobs and
// evaluations, plus the shared get/list/cancel plumbing keyed by job kind.
// Tested in tests/api/handler_util_test.cpp and over HTTP in tests/server/api_resources_test.cpp.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "api/handler_util.h"
#include "db/queue.h"

namespace kforge::api {

//! The API status of a job: available -> queued; scheduled -> queued (first
//! attempt) or retrying; retryable -> retrying; running -> running;
//! completed -> succeeded; failed, discarded -> failed; cancelled -> cancelled.
std::string api_status(const db::Job& job);

//! Fields every job resource shares: id, object, status, progress, error,
//! attempt, max_attempts, cancel_requested, created_at, started_at, finished_at.
json job_common_json(const db::Job& job, const std::string& object);

//! Renders a job of the right kind as its resource JSON (may read more rows).
using JobRenderer = std::function<json(pqxx::connection&, const db::Job&)>;

//! The job with the path's {id} if its kind is one of `kinds`; else nullopt.
std::optional<db::Job> job_of_kind(pqxx::connection& conn, const std::string& id_text,
                                   const std::vector<std::string>& kinds);

//! GET list of the given kinds, newest first, cursor = job id; ?status= filters by API status.
HttpResponse list_jobs(pqxx::connection& conn, const HttpRequest& req, const std::vector<std::string>& kinds,
                       const JobRenderer& render);
//! POST .../cancel: 200 when cancelled, 202 when the running worker was asked
//! to stop, 409 when already finished, 404 when unknown.
HttpResponse cancel_job(pqxx::connection& conn, const HttpRequest& req, const std::vector<std::string>& kinds,
                        const std::string& noun, const JobRenderer& render);
//! The key passed to the queue for Idempotency-Key, scoped to the caller.
std::string queue_idempotency_key(const HttpRequest& req, const Principal& principal);
//! POST of a job resource: inserts `insert` and, when the request has an Idempotency-Key,
//! binds the key to the body's hash in the same transaction (with_post stores the
//! response after); answers 202 with render(job) and Location: <collection>/<id>.
HttpResponse enqueue_job(pqxx::connection& conn, const HttpRequest& req, const Principal& principal,
                         db::JobInsert insert, const std::string& collection, const JobRenderer& render);
//! with_post's PendingReplay for a job collection: 202 with the job as it is now.
PendingReplay job_replay(const std::string& collection, const JobRenderer& render);

}  // namespace kforge::api
