// Conditional GET (api/conditional.h): ETags follow the body, If-None-Match lists
// and weak tags match, a match is a bodiless 304 keeping the validators, and only
// 200 GET/HEAD responses take part. Run: scripts/test.sh build -R api_conditional
#include <gtest/gtest.h>

#include "api/conditional.h"
#include "api/response_cache.h"

using kforge::api::HttpRequest;
using kforge::api::HttpResponse;

namespace {

std::string header_of(const HttpResponse& resp, const std::string& name) {
  for (const auto& [key, value] : resp.headers) {
    if (key == name) return value;
  }
  return "";
}

HttpRequest get_with(const std::string& if_none_match) {
  HttpRequest req;
  req.method = "GET";
  req.path = "/v1/jobs";
  if (!if_none_match.empty()) req.headers["if-none-match"] = if_none_match;
  return req;
}

HttpResponse page(const std::string& body) {
  HttpResponse resp;
  resp.body = body;
  return resp;
}

}  // namespace

TEST(Conditional, EtagIsQuotedAndFollowsTheBody) {
  std::string first = kforge::api::etag_of("{\"data\":[]}");
  EXPECT_EQ(first.size(), 18u);
  EXPECT_EQ(first.front(), '"');
  EXPECT_EQ(first.back(), '"');
  EXPECT_EQ(first, kforge::api::etag_of("{\"data\":[]}"));
  EXPECT_NE(first, kforge::api::etag_of("{\"data\":[1]}"));
}

TEST(Conditional, IfNoneMatchListsWeakTagsAndStar) {
  std::string tag = "\"0123456789abcdef\"";
  EXPECT_TRUE(kforge::api::etag_matches(tag, tag));
  EXPECT_TRUE(kforge::api::etag_matches("W/" + tag, tag));
  EXPECT_TRUE(kforge::api::etag_matches("\"other\", " + tag, tag));
  EXPECT_TRUE(kforge::api::etag_matches("*", tag));
  EXPECT_FALSE(kforge::api::etag_matches("\"other\"", tag));
  EXPECT_FALSE(kforge::api::etag_matches("", tag));
  EXPECT_FALSE(kforge::api::etag_matches("0123456789abcdef", tag)) << "unquoted is a different tag";
}

TEST(Conditional, MatchingGetBecomesBodiless304WithValidators) {
  HttpResponse fresh = kforge::api::conditional_get(get_with(""), page("{\"n\":1}"));
  EXPECT_EQ(fresh.status, 200);
  std::string tag = header_of(fresh, "ETag");
  ASSERT_FALSE(tag.empty());
  EXPECT_EQ(header_of(fresh, "Cache-Control"), "no-cache") << "clients must revalidate every poll";

  HttpResponse again = kforge::api::conditional_get(get_with(tag), page("{\"n\":1}"));
  EXPECT_EQ(again.status, 304);
  EXPECT_TRUE(again.body.empty());
  EXPECT_EQ(header_of(again, "ETag"), tag);
  EXPECT_EQ(header_of(again, "Cache-Control"), "no-cache");

  HttpResponse changed = kforge::api::conditional_get(get_with(tag), page("{\"n\":2}"));
  EXPECT_EQ(changed.status, 200) << "a changed body is sent in full";
  EXPECT_EQ(changed.body, "{\"n\":2}");
  EXPECT_NE(header_of(changed, "ETag"), tag);
}

TEST(Conditional, OnlyOkGetsTakePart) {
  HttpRequest post = get_with("*");
  post.method = "POST";
  EXPECT_EQ(kforge::api::conditional_get(post, page("{}")).status, 200);
  EXPECT_TRUE(header_of(kforge::api::conditional_get(post, page("{}")), "ETag").empty());

  HttpResponse missing = page("{\"title\":\"Not Found\"}");
  missing.status = 404;
  HttpResponse out = kforge::api::conditional_get(get_with("*"), missing);
  EXPECT_EQ(out.status, 404);
  EXPECT_TRUE(header_of(out, "ETag").empty());

  HttpResponse kept = page("{}");
  kept.headers.emplace_back("Cache-Control", "public, max-age=86400");
  kept = kforge::api::conditional_get(get_with(""), kept);
  EXPECT_EQ(header_of(kept, "Cache-Control"), "public, max-age=86400") << "a route's own caching header wins";
}

TEST(Conditional, CachedPagesCarryTheirEtag) {
  kforge::api::ResponseCache cache(std::chrono::seconds(10));
  cache.put("k", page("{\"rows\":[]}"));
  auto hit = cache.get("k");
  ASSERT_TRUE(hit);
  EXPECT_EQ(header_of(*hit, "ETag"), kforge::api::etag_of("{\"rows\":[]}")) << "computed once at put, not per hit";
}
