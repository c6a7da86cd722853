// Opening PostgreSQL connections with kforge's defaults (connect timeout,
// application name), a reconnecting link for long-lived users, and a small bounded
// pool for the server's executor.
// Test: every database test, e.g. scripts/test.sh build -R 'db_queue_test|worker_'.
#pragma once

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <pqxx/pqxx>

namespace kforge::db {

//! Opens a connection. Adds connect_timeout=5 and application_name=kforge
//! when the URL does not set them. Throws pqxx::broken_connection on failure.
std::unique_ptr<pqxx::connection> connect(const std::string& url);

//! The URL with those defaults applied (exposed for tests and logging).
std::string with_defaults(const std::string& url);

//! One connection that reopens on the next get() after reset() or once it is closed:
//! what a long-lived thread or job holds to ride out a database restart.
class Link {
 public:
  explicit Link(std::string url) : url_(std::move(url)) {}
  //! The open connection, connecting first if needed (throws pqxx::broken_connection).
  pqxx::connection& get() {
    if (!conn_ || !conn_->is_open()) conn_ = connect(url_);
    return *conn_;
  }
  //! Drops the connection; the next get() opens a new one.
  void reset() { conn_.reset(); }
  //! True while a connection is open.
  bool healthy() const { return conn_ && conn_->is_open(); }

 private:
  std::string url_;
  std::unique_ptr<pqxx::connection> conn_;
};

//! True when `e` means the connection or the server went away (retry on a new
//! connection), false for an error of the statement itself.
bool is_connection_error(const std::exception& e, bool connection_open);

//! A fixed-size pool. acquire() blocks until a connection is free; broken
//! connections are dropped on release and reopened lazily.
class ConnectionPool {
 public:
  ConnectionPool(std::string url, size_t size);

  //! A borrowed connection, returned to the pool on destruction.
  class Lease {
   public:
    Lease(ConnectionPool* pool, std::unique_ptr<pqxx::connection> conn) : pool_(pool), conn_(std::move(conn)) {}
    Lease(Lease&& other) noexcept : pool_(other.pool_), conn_(std::move(other.conn_)) { other.pool_ = nullptr; }
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    pqxx::connection& operator*() { return *conn_; }
    pqxx::connection* operator->() { return conn_.get(); }
    //! Marks the connection broken so it is not reused.
    void discard() { conn_.reset(); }

   private:
    ConnectionPool* pool_;
    std::unique_ptr<pqxx::connection> conn_;
  };

  //! Borrows a connection, opening one if needed (throws if the database is down).
  Lease acquire();
  const std::string& url() const { return url_; }

 private:
  friend class Lease;
  void release(std::unique_ptr<pqxx::connection> conn);

  std::string url_;
  size_t size_;
  size_t outstanding_ = 0;
  std::vector<std::unique_ptr<pqxx::connection>> idle_;
  std::mutex mutex_;
  std::condition_variable freed_;
};

}  // namespace kforge::db
