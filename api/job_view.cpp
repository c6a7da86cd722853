// Job -> API resource mapping behind api/job_view.h.
// Test: ctest -R 'api_(handler_util|resources)_test'.
#include "api/job_view.h"

#include <algorithm>

#include "common/sha256.h"
#include "db/tokens.h"

namespace kforge::api {

std::string api_status(const db::Job& job) {
  switch (job.state) {
    case db::JobState::available: return "queued";
    case db::JobState::scheduled: return job.attempt > 0 ? "retrying" : "queued";
    case db::JobState::retryable: return "retrying";
    case db::JobState::running: return "running";
    case db::JobState::completed: return "succeeded";
    case db::JobState::failed: return "failed";
    case db::JobState::discarded: return "failed";
    case db::JobState::cancelled: return "cancelled";
  }
  return "failed";
}

namespace {

json or_null(const std::string& text) { return text.empty() ? json(nullptr) : json(text); }

// The last attempt's error message, or null.
json last_error(const db::Job& job) {
  json errors = parse_stored(job.errors_json);
  if (!errors.is_array() || errors.empty()) return nullptr;
  const json& last = errors.back();
  json out = {{"message", last.value("error", "")}, {"attempt", last.value("attempt", 0)}};
  out["at"] = last.contains("at") ? last["at"] : json(nullptr);
  return out;
}

// Which queue states an API status filter covers.
bool status_matches(const db::Job& job, const std::string& status) { return status.empty() || api_status(job) == status; }

}  // namespace

json job_common_json(const db::Job& job, const std::string& object) {
  json progress = parse_stored(job.progress_json);
  json out = {{"id", job.id},
              {"object", object},
              {"status", api_status(job)},
              {"progress", progress.is_null() ? json::object() : progress},
              {"attempt", job.attempt},
              {"max_attempts", job.max_attempts},
              {"cancel_requested", job.cancel_requested},
              {"priority", job.priority},
              {"created_at", job.created_at},
              {"started_at", or_null(job.attempted_at)},
              {"finished_at", or_null(job.finished_at)}};
  json error = last_error(job);
  // A retrying job keeps its last error visible; a succeeded one does not need it.
  out["error"] = api_status(job) == "succeeded" ? json(nullptr) : error;
  if (api_status(job) == "cancelled" && error.is_null()) out["error"] = nullptr;
  return out;
}

std::optional<db::Job> job_of_kind(pqxx::connection& conn, const std::string& id_text,
                                   const std::vector<std::string>& kinds) {
  int64_t job_id = 0;
  if (!parse_path_id(id_text, &job_id)) return std::nullopt;
  auto job = db::job_get(conn, job_id);
  if (!job || std::find(kinds.begin(), kinds.end(), job->kind) == kinds.end()) return std::nullopt;
  return job;
}

HttpResponse list_jobs(pqxx::connection& conn, const HttpRequest& req, const std::vector<std::string>& kinds,
                       const JobRenderer& render) {
  PageRequest page;
  if (auto error = parse_page(req, &page)) return *error;
  int64_t after = 0;
  if (!parse_id_cursor(page.after, &after)) {
    return problem(ErrorKind::bad_request, "after: not a cursor from this list", {{"after", "malformed cursor"}});
  }
  std::string status = req.query.count("status") ? req.query.at("status") : "";
  static const std::vector<std::string> statuses = {"queued", "running", "succeeded", "failed", "cancelled", "retrying"};
  if (!status.empty() && std::find(statuses.begin(), statuses.end(), status) == statuses.end()) {
    return problem(ErrorKind::bad_request, "status must be one of queued, running, succeeded, failed, cancelled, retrying",
                   {{"status", "unknown status '" + status + "'"}});
  }
  // Each kind's list is newest first; merging them keeps that order. A status
  // filter is applied after fetching, so scan pages until the page is full.
  std::vector<db::Job> picked;
  int64_t scan_after = after;
  bool exhausted = false;
  while (static_cast<int>(picked.size()) <= page.limit && !exhausted) {
    std::vector<db::Job> merged;
    for (const auto& kind : kinds) {
      db::JobFilter filter;
      filter.kind = kind;
      filter.after_id = scan_after;
      filter.limit = page.limit + 1;
      auto jobs = db::job_list(conn, filter);
      merged.insert(merged.end(), jobs.begin(), jobs.end());
    }
    std::sort(merged.begin(), merged.end(), [](const db::Job& a, const db::Job& b) { return a.id > b.id; });
    if (static_cast<int>(merged.size()) > page.limit + 1) merged.resize(page.limit + 1);
    exhausted = static_cast<int>(merged.size()) <= page.limit;
    for (const auto& job : merged) {
      if (status_matches(job, status)) picked.push_back(job);
      scan_after = job.id;
      if (static_cast<int>(picked.size()) > page.limit) break;
    }
    if (merged.empty()) exhausted = true;
  }
  json items = json::array();
  std::optional<std::string> next;
  for (size_t job_idx = 0; job_idx < picked.size(); ++job_idx) {
    if (static_cast<int>(job_idx) == page.limit) {
      next = std::to_string(picked[job_idx - 1].id);
      break;
    }
    items.push_back(render(conn, picked[job_idx]));
  }
  return page_response(std::move(items), next);
}

HttpResponse cancel_job(pqxx::connection& conn, const HttpRequest& req, const std::vector<std::string>& kinds,
                        const std::string& noun, const JobRenderer& render) {
  const std::string& id_text = req.path_params.at("id");
  auto job = job_of_kind(conn, id_text, kinds);
  if (!job) return problem(ErrorKind::not_found, "no " + noun + " " + id_text);
  auto result = db::job_cancel(conn, job->id);
  auto after = db::job_get(conn, job->id);
  switch (result) {
    case db::CancelResult::cancelled: return json_response(200, render(conn, *after));
    case db::CancelResult::cancel_requested: return json_response(202, render(conn, *after));
    case db::CancelResult::already_finished:
      return problem(ErrorKind::conflict, noun + " " + id_text + " already finished (" + api_status(*after) + ")");
    case db::CancelResult::not_found: break;
  }
  return problem(ErrorKind::not_found, "no " + noun + " " + id_text);
}

std::string queue_idempotency_key(const HttpRequest& req, const Principal& principal) {
  std::string key = header(req, "idempotency-key");
  if (key.empty()) return "";
  // Hashed so callers cannot collide across principals or routes, and it fits 255 chars;
  // the body's hash is part of it, so an in-flight job is only ever reused for its own body.
  return "api:" + sha256_hex(principal.key() + "\n" + req.path + "\n" + key + "\n" + sha256_hex(req.body));
}

namespace {

HttpResponse job_created(pqxx::connection& conn, const db::Job& job, const std::string& collection,
                         const JobRenderer& render) {
  HttpResponse resp = json_response(202, render(conn, job));
  resp.headers.emplace_back("Location", collection + "/" + std::to_string(job.id));
  return resp;
}

}  // namespace

HttpResponse enqueue_job(pqxx::connection& conn, const HttpRequest& req, const Principal& principal,
                         db::JobInsert insert, const std::string& collection, const JobRenderer& render) {
  insert.idempotency_key = queue_idempotency_key(req, principal);
  std::string key = header(req, "idempotency-key");
  db::InsertResult inserted;
  {
    // The job and the key's binding to this body commit together or not at all.
    pqxx::work txn(conn);
    inserted = db::job_insert(txn, insert);
    if (!key.empty() && !db::idempotency_bind(txn, principal.key(), req.method, req.path, key,
                                              sha256_hex(req.body), inserted.job.id)) {
      txn.abort();  // with_post's lock makes this unreachable short of a lock lost with its connection
      HttpResponse busy = problem(ErrorKind::conflict, "Idempotency-Key '" + key + "' was bound meanwhile; retry");
      busy.headers.emplace_back("Retry-After", "1");
      return busy;
    }
    txn.commit();
  }
  return job_created(conn, inserted.job, collection, render);
}

PendingReplay job_replay(const std::string& collection, const JobRenderer& render) {
  return [collection, render](pqxx::connection& conn, int64_t job_id) {
    auto job = db::job_get(conn, job_id);
    if (!job) return problem(ErrorKind::not_found, "the job created with this Idempotency-Key no longer exists");
    return job_created(conn, *job, collection, render);
  };
}

}  // namespace kforge::api
