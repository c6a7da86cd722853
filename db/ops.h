// Ops (TorchScript reference + inputs) and candidates (one checked kernel each):
// storage for /v1/ops, generations' results and the ops leaderboard.
// JSON columns travel as JSON text; api/ parses them. Tested in tests/db/api_store_test.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "db/queue.h"

namespace kforge::db {

//! A stored op.
struct OpRecord {
  int64_t id = 0;
  std::string name;
  std::string source;           //!< as submitted
  std::string compiled_source;  //!< after the F.x rewrite
  std::string spec_json;        //!< the full op JSON
  std::string spec_sha256;
  std::string outputs_json = "{}";  //!< sample run: {outputs: [{shape, dtype}], shapes, scaled, wall_ms}
  std::string created_at;
  int64_t created_by = 0;       //!< token id, 0 = none
  int level = 0;                //!< suite level (1 single ops, 2 fusions); 0 = not given
};

//! Inserts an op; fills id and created_at.
OpRecord op_insert(pqxx::connection& conn, OpRecord op);
//! One op by id.
std::optional<OpRecord> op_get(pqxx::connection& conn, int64_t op_id);
//! The first op with this canonical-spec hash (identical resubmissions reuse it).
std::optional<OpRecord> op_find_by_sha256(pqxx::connection& conn, const std::string& spec_sha256);
//! Ops newest first with id < after_id (0: from the newest).
std::vector<OpRecord> op_list(pqxx::connection& conn, int64_t after_id, int limit);

//! What op_delete did.
struct OpDelete {
  bool found = false;            //!< false: no such op
  int64_t in_flight = 0;         //!< > 0: generations of it are waiting or running; nothing deleted
  int64_t candidates_deleted = 0;
};
//! Deletes an op and its candidates in one transaction, unless a generation of it is in flight.
OpDelete op_delete(pqxx::connection& conn, int64_t op_id);

//! One checked kernel (harness outcome vocabulary).
struct CandidateRecord {
  int64_t id = 0;
  int64_t job_id = 0;
  int64_t op_id = 0;
  int64_t model_id = 0;  //!< 0 = none (teacher compiler, import)
  int sample_idx = 0;
  std::string target = "opencl";
  std::string device;
  std::string source;
  std::string outcome;  //!< format_error ... correct
  std::string message;
  std::optional<double> reward;
  std::optional<double> kernel_ms;
  std::optional<double> baseline_ms;
  std::optional<double> speedup;
  bool flagged = false;
  std::string details_json = "{}";
  std::string created_at;
};

//! Inserts a candidate; returns its id. (Imports and tests; a job writes through candidate_write.)
int64_t candidate_insert(pqxx::connection& conn, const CandidateRecord& candidate);
//! Starts an attempt of a job: deletes its candidates from other attempts, only while
//! `lease` holds the job. False when it does not (the lease was lost).
bool candidate_begin_attempt(pqxx::connection& conn, const JobLease& lease);
//! Writes the candidate of (lease.job_id, lease.attempt, sample_idx) once, only while
//! `lease` holds the job: a repeat returns the same row's id. nullopt when the lease is lost.
std::optional<int64_t> candidate_write(pqxx::connection& conn, const JobLease& lease,
                                       const CandidateRecord& candidate);
//! A job's candidates in id order after `after_id`.
std::vector<CandidateRecord> candidate_list_for_job(pqxx::connection& conn, int64_t job_id, int64_t after_id,
                                                    int limit);
//! An op's candidates (every job) in id order after `after_id`.
std::vector<CandidateRecord> candidate_list_for_op(pqxx::connection& conn, int64_t op_id, int64_t after_id, int limit);
//! One candidate by id.
std::optional<CandidateRecord> candidate_get(pqxx::connection& conn, int64_t candidate_id);
//! The fastest correct, unflagged candidate of a job.
std::optional<CandidateRecord> candidate_best_for_job(pqxx::connection& conn, int64_t job_id);
//! Candidate counts by outcome for a job.
std::vector<std::pair<std::string, int64_t>> candidate_counts_for_job(pqxx::connection& conn, int64_t job_id);

}  // namespace kforge::db
