// Handler helpers (api/handler_util.h) and the job status mapping (api/job_view.h):
// JSON body rules, field validation, pagination parameters and cursors.
// Run: scripts/test.sh build -R api_handler_util
#include <gtest/gtest.h>

#include "api/handler_util.h"
#include "api/job_view.h"

using kforge::api::HttpRequest;
using kforge::api::json;

TEST(ParseJsonObject, RejectsEmptyTruncatedNonObjectAndTooDeep) {
  json out;
  auto empty = kforge::api::parse_json_object("", &out);
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->status, 400);
  auto truncated = kforge::api::parse_json_object("{\"name\": \"x", &out);
  ASSERT_TRUE(truncated);
  EXPECT_EQ(truncated->status, 400);
  EXPECT_NE(truncated->body.find("not valid JSON"), std::string::npos);
  auto array = kforge::api::parse_json_object("[1,2]", &out);
  ASSERT_TRUE(array);
  EXPECT_NE(array->body.find("not array"), std::string::npos);
  std::string deep(100000, '[');
  auto too_deep = kforge::api::parse_json_object(deep, &out);
  ASSERT_TRUE(too_deep);
  EXPECT_NE(too_deep->body.find("nesting depth"), std::string::npos);
  // Brackets inside strings do not count as nesting.
  EXPECT_FALSE(kforge::api::parse_json_object("{\"s\": \"" + std::string(200, '[') + "\"}", &out));
  auto bad_utf8 = kforge::api::parse_json_object("{\"s\": \"\xff\xfe\"}", &out);
  ASSERT_TRUE(bad_utf8);
  EXPECT_EQ(bad_utf8->status, 400);
  auto huge = kforge::api::parse_json_object("{\"n\": 1e999}", &out);
  ASSERT_TRUE(huge);
  EXPECT_EQ(huge->status, 400);
}

TEST(FieldReader, CollectsEveryErrorWithFieldNames) {
  json body = json::parse(R"({"name": 5, "samples": 100000, "target": "vulkan", "seed": 1.5, "extra": true,
                               "big": 99999999999999999999})");
  kforge::api::FieldReader fields(body, "op.");
  fields.only({"name", "samples", "target", "seed", "big", "missing"});
  fields.string("name", true);
  EXPECT_EQ(fields.integer("samples", false, 8, 1, 256), 8);
  fields.choice("target", false, "opencl", {"opencl", "cuda"});
  fields.integer("seed", false, 0, 0, 100);
  fields.integer("big", false, 0, 0, 100);
  fields.string("missing", true);
  ASSERT_FALSE(fields.ok());
  std::map<std::string, std::string> by_field;
  for (const auto& error : fields.errors()) by_field[error.field] = error.message;
  EXPECT_EQ(by_field["op.extra"], "is not a known field");
  EXPECT_EQ(by_field["op.name"], "must be a string, not integer");
  EXPECT_EQ(by_field["op.samples"], "must be between 1 and 256");
  EXPECT_EQ(by_field["op.target"], "must be one of: opencl, cuda");
  EXPECT_EQ(by_field["op.seed"], "must be an integer, not number");
  EXPECT_FALSE(by_field["op.big"].empty());
  EXPECT_EQ(by_field["op.missing"], "is required");
  auto resp = fields.response();
  EXPECT_EQ(resp.status, 422);
  EXPECT_EQ(resp.content_type, "application/problem+json");
  EXPECT_EQ(json::parse(resp.body)["errors"].size(), fields.errors().size());
}

TEST(Pagination, LimitBoundsAndCursors) {
  HttpRequest req;
  kforge::api::PageRequest page;
  EXPECT_FALSE(kforge::api::parse_page(req, &page));
  EXPECT_EQ(page.limit, 20);
  for (const char* bad : {"0", "101", "-1", "abc", "1e2", "99999999999"}) {
    req.query["limit"] = bad;
    auto error = kforge::api::parse_page(req, &page);
    ASSERT_TRUE(error) << bad;
    EXPECT_EQ(error->status, 400) << bad;
  }
  req.query["limit"] = "100";
  EXPECT_FALSE(kforge::api::parse_page(req, &page));
  EXPECT_EQ(page.limit, 100);

  std::vector<std::string> parts;
  std::string cursor = kforge::api::encode_cursor({"12", "opencl", "pocl cpu|x"});
  ASSERT_TRUE(kforge::api::decode_cursor(cursor, 3, &parts));
  EXPECT_EQ(parts, (std::vector<std::string>{"12", "opencl", "pocl cpu|x"}));
  EXPECT_FALSE(kforge::api::decode_cursor(cursor, 2, &parts));
  EXPECT_FALSE(kforge::api::decode_cursor("zz", 1, &parts));
  int64_t id = 0;
  EXPECT_TRUE(kforge::api::parse_id_cursor("", &id));
  EXPECT_EQ(id, 0);
  EXPECT_FALSE(kforge::api::parse_id_cursor("-3", &id));
  EXPECT_FALSE(kforge::api::parse_path_id("0", &id));
  EXPECT_FALSE(kforge::api::parse_path_id("12abc", &id));
  EXPECT_TRUE(kforge::api::parse_path_id("42", &id));
  EXPECT_EQ(id, 42);
}

TEST(JobView, OneStatusVocabulary) {
  using kforge::db::JobState;
  kforge::db::Job job;
  auto status = [&](JobState state, int attempt) {
    job.state = state;
    job.attempt = attempt;
    return kforge::api::api_status(job);
  };
  EXPECT_EQ(status(JobState::available, 0), "queued");
  EXPECT_EQ(status(JobState::scheduled, 0), "queued");
  EXPECT_EQ(status(JobState::scheduled, 1), "retrying");
  EXPECT_EQ(status(JobState::retryable, 1), "retrying");
  EXPECT_EQ(status(JobState::running, 1), "running");
  EXPECT_EQ(status(JobState::completed, 1), "succeeded");
  EXPECT_EQ(status(JobState::failed, 1), "failed");
  EXPECT_EQ(status(JobState::discarded, 3), "failed");
  EXPECT_EQ(status(JobState::cancelled, 0), "cancelled");

  job.state = JobState::retryable;
  job.errors_json = R"([{"attempt": 1, "at": "2026-11-22T08:00:00Z", "error": "worker lost"}])";
  job.progress_json = "{}";
  json view = kforge::api::job_common_json(job, "generation");
  EXPECT_EQ(view["status"], "retrying");
  EXPECT_EQ(view["error"]["message"], "worker lost");
  EXPECT_TRUE(view["started_at"].is_null());
}
