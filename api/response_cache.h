// A small time-bounded cache of whole responses for public, read-heavy pages
// (the leaderboards): at thousands of requests per second a 1 s staleness saves
// nearly every database round trip. Tested in tests/api/response_cache_test.cpp.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "api/http.h"

namespace kforge::api {

class ResponseCache {
 public:
  //! ttl 0 disables the cache; at most max_entries keys are kept.
  explicit ResponseCache(std::chrono::milliseconds ttl, size_t max_entries = 1024)
      : ttl_(ttl), max_entries_(max_entries) {}
  //! A fresh stored response for the key.
  std::optional<HttpResponse> get(const std::string& key);
  //! Stores a response (only 200s are worth keeping) with its ETag (api/conditional.h).
  void put(const std::string& key, const HttpResponse& resp);
  //! The cache key of a request: path plus its query parameters in order.
  static std::string key_of(const HttpRequest& req);
  bool enabled() const { return ttl_.count() > 0; }

 private:
  struct Entry {
    std::chrono::steady_clock::time_point expires;
    HttpResponse resp;
  };
  std::chrono::milliseconds ttl_;
  size_t max_entries_;
  std::mutex mutex_;
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace kforge::api
