// Helpers for queue tests that run real worker processes: start a worker binary
// against a database, poll a SQL condition, read one value.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "common/subprocess.h"

namespace kforge::test {

//! Starts build/bin/<binary> --database-url url <args...>, logging to a temp file
//! (its path is returned in log_path).
Subprocess start_worker(const std::string& binary, const std::string& url, const std::vector<std::string>& args,
                        std::string* log_path = nullptr);

//! Polls `done` every 20 ms until it returns true or `timeout` passes; returns its last value.
bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds timeout);

//! Runs one query on a fresh connection and returns the first column of the first row ("" if NULL or no row).
std::string sql_value(const std::string& url, const std::string& query);

//! The last `max_chars` of a file (a worker's log) for failure messages.
std::string file_tail(const std::string& path, size_t max_chars = 4000);

}  // namespace kforge::test
