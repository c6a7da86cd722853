// ResponseCache behind api/response_cache.h.
// Test: ctest -R api_response_cache_test.
#include "api/response_cache.h"

#include "api/conditional.h"

namespace kforge::api {

std::optional<HttpResponse> ResponseCache::get(const std::string& key) {
  if (!enabled()) return std::nullopt;
  std::lock_guard lock(mutex_);
  auto found = entries_.find(key);
  if (found == entries_.end()) return std::nullopt;
  if (found->second.expires <= std::chrono::steady_clock::now()) {
    entries_.erase(found);
    return std::nullopt;
  }
  return found->second.resp;
}

void ResponseCache::put(const std::string& key, const HttpResponse& resp) {
  if (!enabled() || resp.status != 200) return;
  std::lock_guard lock(mutex_);
  // Keys come from clients (cursors, filters): never let them grow without bound.
  if (entries_.size() >= max_entries_) entries_.clear();
  // The ETag is computed once here, not on every hit (pollers revalidate with it).
  HttpResponse stored = resp;
  add_etag(stored);
  entries_[key] = {std::chrono::steady_clock::now() + ttl_, std::move(stored)};
}

std::string ResponseCache::key_of(const HttpRequest& req) {
  std::string key = req.path;
  for (const auto& [name, value] : req.query) key += "\n" + name + "=" + value;  // std::map: sorted
  return key;
}

}  // namespace kforge::api
