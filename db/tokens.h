// API tokens (hashed) and Idempotency-Key records: the storage behind api/auth
// and Idempotency-Key handling. Tested in tests/db/api_store_test.cpp and over HTTP.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <pqxx/pqxx>

namespace kforge::db {

//! A stored token (never the secret itself).
struct TokenRecord {
  int64_t id = 0;
  std::string name;
  std::string prefix;               //!< first characters of the secret, for people
  std::vector<std::string> scopes;  //!< "submit", "admin"
  std::string created_at;
  std::string last_used_at;         //!< "" when never used
  std::string revoked_at;           //!< "" when active
};

//! Inserts a token by its sha256 hex; returns the stored record.
TokenRecord token_insert(pqxx::connection& conn, const std::string& name, const std::string& sha256_hex,
                         const std::string& prefix, const std::vector<std::string>& scopes);
//! The active token with this hash (and marks it used), or nullopt.
std::optional<TokenRecord> token_find(pqxx::connection& conn, const std::string& sha256_hex);
//! Tokens newest first, ids below `after_id` (0: from the newest).
std::vector<TokenRecord> token_list(pqxx::connection& conn, int64_t after_id, int limit);
//! Revokes a token; false if it does not exist or is already revoked.
bool token_revoke(pqxx::connection& conn, int64_t token_id);

//! The first response given to one (principal, method, path, key).
struct IdempotencyRecord {
  std::string request_sha256;
  int status = 0;  //!< 0: bound to job_id in the job's transaction, response not stored yet
  std::string content_type;
  std::string body;
  int64_t job_id = 0;  //!< the job a job-creating POST inserted (0 = none)
};

//! Looks up a record younger than 24 hours.
std::optional<IdempotencyRecord> idempotency_find(pqxx::connection& conn, const std::string& principal,
                                                  const std::string& method, const std::string& path,
                                                  const std::string& key);
//! Stores the first response (an existing fresh record wins).
void idempotency_store(pqxx::connection& conn, const std::string& principal, const std::string& method,
                       const std::string& path, const std::string& key, const IdempotencyRecord& record);

//! Inside the job insert's transaction: binds the key to `request_sha256` and `job_id`
//! (status 0). False when a fresh record already holds the key (roll back then).
bool idempotency_bind(pqxx::transaction_base& txn, const std::string& principal, const std::string& method,
                      const std::string& path, const std::string& key, const std::string& request_sha256,
                      int64_t job_id);
//! Takes the session lock for one key's hash without waiting; false when another
//! request holds it. Release with idempotency_unlock on the same connection.
bool idempotency_try_lock(pqxx::connection& conn, int32_t key_hash);
//! Releases idempotency_try_lock's lock.
void idempotency_unlock(pqxx::connection& conn, int32_t key_hash);

//! Deletes idempotency records older than 24 hours; returns how many.
int64_t idempotency_expire(pqxx::connection& conn);

//! Splits "a,b" into {"a","b"} (empty string -> empty list).
std::vector<std::string> split_csv(const std::string& text);

}  // namespace kforge::db
