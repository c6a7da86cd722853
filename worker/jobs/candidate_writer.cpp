// CandidateWriter behind candidate_writer.h. The statements (db/queries/ops.sql) check the
// lease and key the row by (job, attempt, sample), so a retried statement, a retried job
// and a worker that lost its lease can never add a row twice.
// Test: ctest -R 'jobs_(generate|faults)_test'.
#include "worker/jobs/candidate_writer.h"

#include <algorithm>

#include "common/log.h"
#include "worker/harness/program.h"

namespace kforge::jobs {
namespace {

// PostgreSQL text holds neither NUL nor invalid UTF-8, and a sampled policy's bytes may
// be either (the checker rejects such a program as format_error, which must still be
// stored): each bad byte becomes U+FFFD.
std::string storable_text(const std::string& text) {
  static const std::string replacement = "\xEF\xBF\xBD";
  std::string out, rest = text;
  for (size_t bad; (bad = harness::invalid_utf8_offset(rest)) != std::string::npos; rest.erase(0, bad + 1)) {
    out += rest.substr(0, bad) + replacement;
  }
  out += rest;
  for (size_t nul; (nul = out.find('\0')) != std::string::npos;) out.replace(nul, 1, replacement);
  return out;
}

}  // namespace

CandidateWriter::CandidateWriter(const std::string& database_url, const worker::JobContext& ctx)
    : link_(database_url), ctx_(ctx) {
  const db::Job& job = ctx.job();
  lease_ = {job.id, job.worker_id.value_or(0), job.attempt};
}

template <typename Step>
auto CandidateWriter::retry(const char* what, Step step)
    -> std::optional<decltype(step(std::declval<pqxx::connection&>()))> {
  double backoff = 0.1;
  bool reported = false;
  for (;;) {
    try {
      auto value = step(link_.get());
      if (reported) log_info("jobs", "database back", {{"job_id", std::to_string(lease_.job_id)}, {"step", what}});
      return value;
    } catch (const std::exception& e) {
      if (!db::is_connection_error(e, link_.healthy())) throw;
      link_.reset();
      if (!reported) {
        log_warn("jobs", "database away, retrying",
                 {{"job_id", std::to_string(lease_.job_id)}, {"step", what}, {"error", e.what()}});
        reported = true;
      }
    }
    // The keeper thread reports a lost lease or a shutdown through the context.
    if (!ctx_.sleep_for(backoff)) return std::nullopt;
    backoff = std::min(backoff * 2, 2.0);
  }
}

bool CandidateWriter::begin() {
  auto held = retry("begin attempt", [&](pqxx::connection& conn) { return db::candidate_begin_attempt(conn, lease_); });
  return held && *held;
}

std::optional<int64_t> CandidateWriter::write(const db::CandidateRecord& record) {
  db::CandidateRecord stored = record;
  stored.source = storable_text(record.source);
  stored.message = storable_text(record.message);
  auto id = retry("write candidate",
                  [&](pqxx::connection& conn) { return db::candidate_write(conn, lease_, stored); });
  return id ? *id : std::nullopt;
}

}  // namespace kforge::jobs
