// Routing, 404/405 and problem+json (api/router.h, api/errors.h).
// Run: ctest -R api_router_test
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/errors.h"
#include "api/router.h"

using kforge::api::HttpRequest;
using kforge::api::HttpResponse;

namespace {

HttpRequest make(const std::string& method, const std::string& path) {
  HttpRequest req;
  req.method = method;
  req.path = path;
  req.request_id = "t1";
  return req;
}

kforge::api::Router router() {
  kforge::api::Router r;
  r.add("GET", "/v1/ops/{id}", [](HttpRequest& req) {
    HttpResponse resp;
    resp.body = req.path_params.at("id");
    return resp;
  });
  r.add("POST", "/v1/ops", [](HttpRequest&) -> HttpResponse { throw std::runtime_error("boom"); });
  return r;
}

TEST(Router, CapturesPathParams) {
  auto r = router();
  auto req = make("GET", "/v1/ops/42");
  auto resp = r.dispatch(req);
  EXPECT_EQ(resp.status, 200);
  EXPECT_EQ(resp.body, "42");
  EXPECT_EQ(r.route_of("/v1/ops/7"), "/v1/ops/{id}");
}

TEST(Router, UnknownPathIs404ProblemJson) {
  auto r = router();
  auto req = make("GET", "/v1/nothing");
  auto resp = r.dispatch(req);
  EXPECT_EQ(resp.status, 404);
  EXPECT_EQ(resp.content_type, "application/problem+json");
  auto body = nlohmann::json::parse(resp.body);
  EXPECT_EQ(body["status"], 404);
  EXPECT_EQ(body["title"], "Not Found");
  EXPECT_NE(body["detail"].get<std::string>().find("/v1/nothing"), std::string::npos);
}

TEST(Router, WrongMethodIs405WithAllow) {
  auto r = router();
  auto req = make("DELETE", "/v1/ops/1");
  auto resp = r.dispatch(req);
  EXPECT_EQ(resp.status, 405);
  ASSERT_EQ(resp.headers.size(), 1u);
  EXPECT_EQ(resp.headers[0].first, "Allow");
  EXPECT_EQ(resp.headers[0].second, "GET");
}

TEST(Router, ThrowingHandlerIs500WithoutLeakingTheMessage) {
  auto r = router();
  auto req = make("POST", "/v1/ops");
  auto resp = r.dispatch(req);
  EXPECT_EQ(resp.status, 500);
  EXPECT_EQ(resp.body.find("boom"), std::string::npos);
}

TEST(Problem, ValidationListsFields) {
  auto resp = kforge::api::problem(kforge::api::ErrorKind::unprocessable, "bad op", {{"inputs[0].shape", "must be non-empty"}});
  EXPECT_EQ(resp.status, 422);
  auto body = nlohmann::json::parse(resp.body);
  ASSERT_EQ(body["errors"].size(), 1u);
  EXPECT_EQ(body["errors"][0]["field"], "inputs[0].shape");
}

}  // namespace

TEST(Router, FastPathAnswersOrDefers) {
  kforge::api::Router r;
  int slow_calls = 0;
  r.add("GET", "/v1/board", [&](HttpRequest&) {
    ++slow_calls;
    HttpResponse resp;
    resp.body = "slow";
    return resp;
  });
  bool warm = false;
  r.set_fast_path("GET", "/v1/board", [&](HttpRequest&) -> std::optional<HttpResponse> {
    if (!warm) return std::nullopt;
    HttpResponse resp;
    resp.body = "fast";
    return resp;
  });
  HttpRequest req = make("GET", "/v1/board");
  EXPECT_FALSE(r.try_fast_path(req)) << "cold: defer to the handler";
  warm = true;
  auto fast = r.try_fast_path(req);
  ASSERT_TRUE(fast);
  EXPECT_EQ(fast->body, "fast");
  EXPECT_EQ(slow_calls, 0);
  HttpRequest other = make("GET", "/v1/ops/3");
  EXPECT_FALSE(r.try_fast_path(other)) << "routes without a fast path defer";
}
