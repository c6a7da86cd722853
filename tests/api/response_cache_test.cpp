// ResponseCache (api/response_cache.h): fresh hits, expiry, 200-only, bounded size,
// disabled at ttl 0. Run: scripts/test.sh build -R api_response_cache
#include <gtest/gtest.h>

#include <thread>

#include "api/response_cache.h"

using namespace std::chrono_literals;
using kforge::api::HttpRequest;
using kforge::api::HttpResponse;
using kforge::api::ResponseCache;

TEST(ResponseCache, HitsUntilExpiryOnlyFor200) {
  ResponseCache cache(80ms);
  HttpResponse ok;
  ok.body = "page";
  cache.put("k", ok);
  ASSERT_TRUE(cache.get("k"));
  EXPECT_EQ(cache.get("k")->body, "page");
  HttpResponse error;
  error.status = 503;
  cache.put("e", error);
  EXPECT_FALSE(cache.get("e")) << "errors are never cached";
  std::this_thread::sleep_for(120ms);
  EXPECT_FALSE(cache.get("k")) << "expired";
}

TEST(ResponseCache, BoundedAndDisableable) {
  ResponseCache small(10s, 2);
  HttpResponse ok;
  small.put("a", ok);
  small.put("b", ok);
  small.put("c", ok);  // over the bound: older keys dropped
  EXPECT_FALSE(small.get("a"));
  EXPECT_TRUE(small.get("c"));
  ResponseCache off(0ms);
  off.put("a", ok);
  EXPECT_FALSE(off.get("a"));
  HttpRequest req;
  req.path = "/v1/leaderboard/ops";
  req.query = {{"limit", "5"}, {"after", "ab"}};
  EXPECT_EQ(ResponseCache::key_of(req), "/v1/leaderboard/ops\nafter=ab\nlimit=5");
}
