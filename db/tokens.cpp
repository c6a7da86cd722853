// Token and idempotency queries (db/queries/api_tokens.sql).
// Test: scripts/test.sh build -R 'db_api_store_test|api_core_test'.
#include "db/tokens.h"

#include <sstream>

#include "db/prepared.h"
#include "db/sql.h"

namespace kforge::db {
namespace {

std::string join_csv(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

}  // namespace

std::vector<std::string> split_csv(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

TokenRecord token_insert(pqxx::connection& conn, const std::string& name, const std::string& sha256_hex,
                         const std::string& prefix, const std::vector<std::string>& scopes) {
  pqxx::work txn(conn);
  auto row = txn.exec_params1(sql("token_insert"), name, sha256_hex, prefix, join_csv(scopes));
  txn.commit();
  TokenRecord rec;
  rec.id = row[0].as<int64_t>();
  rec.name = name;
  rec.prefix = prefix;
  rec.scopes = scopes;
  rec.created_at = row[1].as<std::string>();
  return rec;
}

std::optional<TokenRecord> token_find(pqxx::connection& conn, const std::string& sha256_hex) {
  ensure_prepared(conn, "token_find");
  pqxx::work txn(conn);
  auto result = txn.exec_prepared("token_find", sha256_hex);
  txn.commit();
  if (result.empty()) return std::nullopt;
  const auto& row = result[0];
  TokenRecord rec;
  rec.id = row[0].as<int64_t>();
  rec.name = row[1].as<std::string>();
  rec.prefix = row[2].as<std::string>();
  rec.scopes = split_csv(row[3].as<std::string>());
  rec.created_at = row[4].as<std::string>();
  return rec;
}

std::vector<TokenRecord> token_list(pqxx::connection& conn, int64_t after_id, int limit) {
  pqxx::read_transaction txn(conn);
  std::vector<TokenRecord> out;
  for (const auto& row : txn.exec_params(sql("token_list"), after_id, limit)) {
    TokenRecord rec;
    rec.id = row[0].as<int64_t>();
    rec.name = row[1].as<std::string>();
    rec.prefix = row[2].as<std::string>();
    rec.scopes = split_csv(row[3].as<std::string>());
    rec.created_at = row[4].as<std::string>();
    rec.last_used_at = row[5].as<std::string>();
    rec.revoked_at = row[6].as<std::string>();
    out.push_back(std::move(rec));
  }
  return out;
}

bool token_revoke(pqxx::connection& conn, int64_t token_id) {
  pqxx::work txn(conn);
  auto result = txn.exec_params(sql("token_revoke"), token_id);
  txn.commit();
  return !result.empty();
}

std::optional<IdempotencyRecord> idempotency_find(pqxx::connection& conn, const std::string& principal,
                                                  const std::string& method, const std::string& path,
                                                  const std::string& key) {
  pqxx::read_transaction txn(conn);
  auto result = txn.exec_params(sql("idempotency_find"), principal, method, path, key);
  if (result.empty()) return std::nullopt;
  const auto& row = result[0];
  return IdempotencyRecord{row[0].as<std::string>(), row[1].as<int>(), row[2].as<std::string>(),
                           row[3].as<std::string>(), row[4].as<int64_t>()};
}

bool idempotency_bind(pqxx::transaction_base& txn, const std::string& principal, const std::string& method,
                      const std::string& path, const std::string& key, const std::string& request_sha256,
                      int64_t job_id) {
  return !txn.exec_params(sql("idempotency_bind"), principal, method, path, key, request_sha256, job_id).empty();
}

bool idempotency_try_lock(pqxx::connection& conn, int32_t key_hash) {
  pqxx::nontransaction txn(conn);
  return txn.exec_params1(sql("idempotency_try_lock"), key_hash)[0].as<bool>();
}

void idempotency_unlock(pqxx::connection& conn, int32_t key_hash) {
  pqxx::nontransaction txn(conn);
  txn.exec_params(sql("idempotency_unlock"), key_hash);
}

void idempotency_store(pqxx::connection& conn, const std::string& principal, const std::string& method,
                       const std::string& path, const std::string& key, const IdempotencyRecord& record) {
  pqxx::work txn(conn);
  txn.exec_params0(sql("idempotency_store"), principal, method, path, key, record.request_sha256, record.status,
                   record.content_type, record.body);
  txn.commit();
}

int64_t idempotency_expire(pqxx::connection& conn) {
  pqxx::work txn(conn);
  auto result = txn.exec(sql("idempotency_expire"));
  txn.commit();
  return static_cast<int64_t>(result.affected_rows());
}

}  // namespace kforge::db
