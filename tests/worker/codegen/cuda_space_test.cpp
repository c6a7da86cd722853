// Every cuda schedule of every suite op's space (1139 programs) through the harness's
// format, rules and launch planning and NVRTC for sm_90: the variants generations and
// autotuning propose on a GPU must all compile. Run: ctest -R codegen_cuda_space (minutes).
#include <gtest/gtest.h>

#include "tests/worker/codegen/cuda_programs.h"

TEST(CodegenCudaSpace, EveryCudaScheduleOfEverySuiteOpCompilesWithNvrtcForSm90) {
  REQUIRE_NVRTC();
  EXPECT_GE(kforge::testing::check_cuda_programs(/*every_schedule=*/true), 1000);
}
