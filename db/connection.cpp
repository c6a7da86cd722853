// Connections and the pool behind db/connection.h.
// Test: every database test, e.g. scripts/test.sh build -R db_queue_test.
#include "db/connection.h"

namespace kforge::db {

std::string with_defaults(const std::string& url) {
  std::string out = url;
  auto add = [&out](const std::string& key, const std::string& value) {
    if (out.find(key + "=") != std::string::npos) return;
    bool is_uri = out.rfind("postgres", 0) == 0;
    if (is_uri) {
      out += (out.find('?') == std::string::npos ? "?" : "&") + key + "=" + value;
    } else {
      out += " " + key + "=" + value;
    }
  };
  add("connect_timeout", "5");
  add("application_name", "kforge");
  return out;
}

std::unique_ptr<pqxx::connection> connect(const std::string& url) {
  return std::make_unique<pqxx::connection>(with_defaults(url));
}

bool is_connection_error(const std::exception& e, bool connection_open) {
  if (dynamic_cast<const pqxx::broken_connection*>(&e) || dynamic_cast<const pqxx::in_doubt_error*>(&e)) return true;
  if (auto sql = dynamic_cast<const pqxx::sql_error*>(&e)) {
    const std::string& state = sql->sqlstate();
    // 08: connection exception; 57P: operator intervention (shutdown, restart).
    if (state.rfind("08", 0) == 0 || state.rfind("57P", 0) == 0) return true;
  }
  return !connection_open;
}

ConnectionPool::ConnectionPool(std::string url, size_t size) : url_(std::move(url)), size_(size) {}

ConnectionPool::Lease::~Lease() {
  if (pool_) pool_->release(std::move(conn_));
}

ConnectionPool::Lease ConnectionPool::acquire() {
  std::unique_lock lock(mutex_);
  freed_.wait(lock, [this] { return outstanding_ < size_; });
  ++outstanding_;
  if (!idle_.empty()) {
    auto conn = std::move(idle_.back());
    idle_.pop_back();
    return Lease(this, std::move(conn));
  }
  lock.unlock();
  try {
    return Lease(this, connect(url_));
  } catch (...) {
    std::lock_guard relock(mutex_);
    --outstanding_;
    freed_.notify_one();
    throw;
  }
}

void ConnectionPool::release(std::unique_ptr<pqxx::connection> conn) {
  std::lock_guard lock(mutex_);
  --outstanding_;
  if (conn && conn->is_open()) idle_.push_back(std::move(conn));
  freed_.notify_one();
}

}  // namespace kforge::db
