// Flags and environment precedence (common/config.h).
// Run: ctest -R common_config_test
#include <gtest/gtest.h>

#include <cstdlib>

#include "common/config.h"

namespace {

std::vector<kforge::FlagSpec> specs() {
  return {{"port", "KFORGE_TEST_PORT", "8080", "port"}, {"verbose", "", "false", "talk", true}};
}

TEST(Flags, DefaultEnvAndFlagPrecedence) {
  unsetenv("KFORGE_TEST_PORT");
  {
    kforge::Flags flags(specs());
    ASSERT_FALSE(flags.parse(1, nullptr));
    EXPECT_EQ(flags.get_int("port"), 8080);
  }
  setenv("KFORGE_TEST_PORT", "9000", 1);
  {
    kforge::Flags flags(specs());
    char* argv[] = {(char*)"x"};
    ASSERT_FALSE(flags.parse(1, argv));
    EXPECT_EQ(flags.get_int("port"), 9000);
  }
  {
    kforge::Flags flags(specs());
    char* argv[] = {(char*)"x", (char*)"--port=9100", (char*)"pos", (char*)"--verbose"};
    ASSERT_FALSE(flags.parse(4, argv));
    EXPECT_EQ(flags.get_int("port"), 9100);
    EXPECT_TRUE(flags.get_bool("verbose"));
    ASSERT_EQ(flags.positional().size(), 1u);
    EXPECT_EQ(flags.positional()[0], "pos");
  }
  unsetenv("KFORGE_TEST_PORT");
}

TEST(Flags, ErrorsNameTheProblem) {
  kforge::Flags flags(specs());
  char* argv[] = {(char*)"x", (char*)"--nope"};
  auto error = flags.parse(2, argv);
  ASSERT_TRUE(error);
  EXPECT_NE(error->find("--nope"), std::string::npos);

  kforge::Flags missing(specs());
  char* argv2[] = {(char*)"x", (char*)"--port"};
  auto error2 = missing.parse(2, argv2);
  ASSERT_TRUE(error2);
  EXPECT_NE(error2->find("needs a value"), std::string::npos);

  kforge::Flags bad(specs());
  char* argv3[] = {(char*)"x", (char*)"--port", (char*)"80x"};
  ASSERT_FALSE(bad.parse(3, argv3));
  EXPECT_THROW(bad.get_int("port"), std::invalid_argument);
}

}  // namespace
