// logfmt lines (common/log.h): one line per call, values quoted and escaped when they
// need it, and the level filter. Run: ctest -R common_log_test
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>

#include "common/log.h"

namespace {

std::string capture(const std::function<void()>& body) {
  testing::internal::CaptureStderr();
  body();
  return testing::internal::GetCapturedStderr();
}

TEST(Log, OneLineWithQuotedAndEscapedValues) {
  kforge::log_set_level("info");
  std::string out = capture([] {
    kforge::log_info("server", "listening",
                     {{"port", "8080"}, {"path", "a b"}, {"quote", "say \"hi\""}, {"empty", ""}, {"lines", "x\ny"}});
  });
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_EQ(out.rfind("ts=", 0), 0u) << out;
  EXPECT_NE(out.find(" level=info component=server msg=listening port=8080 path=\"a b\" quote=\"say \\\"hi\\\"\" "
                     "empty=\"\" lines=\"x\\ny\"\n"),
            std::string::npos)
      << out;
}

TEST(Log, LevelFilter) {
  kforge::log_set_level("warn");
  std::string quiet = capture([] {
    kforge::log_info("worker", "hidden");
    kforge::log_warn("worker", "shown");
  });
  EXPECT_EQ(quiet.find("hidden"), std::string::npos) << quiet;
  EXPECT_NE(quiet.find("level=warn component=worker msg=shown"), std::string::npos) << quiet;
  kforge::log_set_level("debug");
  std::string loud = capture([] { kforge::log_debug("worker", "detail"); });
  EXPECT_NE(loud.find("level=debug component=worker msg=detail"), std::string::npos) << loud;
  kforge::log_set_level("info");
}

}  // namespace
