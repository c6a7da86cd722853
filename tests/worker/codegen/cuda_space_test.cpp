// Every cuda schedule of every suite op's space (1139 programs) through the harness's
// format, rules and launch planning and NVRTC for sm_90: the variants generations and
// autotuning propose on a GPU must all compile. In three TESTs over every third op file, so
// ctest runs them side by side (SHARDS in tests/CMakeLists.txt): alone it was the suite's
// longest test on a 16-core GPU host (295-385 s). Their bounds add up to the 1000 programs
// the single TEST asked for (343, 488 and 308 today). Run: ctest -R codegen_cuda_space (minutes).
#include <gtest/gtest.h>

#include "tests/worker/codegen/cuda_programs.h"

TEST(CodegenCudaSpace, EveryCudaScheduleOfTheFirstThirdCompilesWithNvrtcForSm90) {
  REQUIRE_NVRTC();
  EXPECT_GE(kforge::testing::check_cuda_programs(/*every_schedule=*/true, 0, 3), 300);
}

TEST(CodegenCudaSpace, EveryCudaScheduleOfTheSecondThirdCompilesWithNvrtcForSm90) {
  REQUIRE_NVRTC();
  EXPECT_GE(kforge::testing::check_cuda_programs(/*every_schedule=*/true, 1, 3), 400);
}

TEST(CodegenCudaSpace, EveryCudaScheduleOfTheLastThirdCompilesWithNvrtcForSm90) {
  REQUIRE_NVRTC();
  EXPECT_GE(kforge::testing::check_cuda_programs(/*every_schedule=*/true, 2, 3), 300);
}
