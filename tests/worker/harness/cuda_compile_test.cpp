// NVRTC compiles for the cuda target, with no GPU needed: a good kernel gives a cubin and
// its symbol, a bad one a log naming the line, a launched name that does not exist says so.
// Test: ctest -R harness_cuda_compile.
#include <gtest/gtest.h>

#include "worker/harness/cuda_backend.h"

namespace kforge::harness {
namespace {

const char* kSiluMul = R"(
extern "C" __global__ void silu_mul(const float* __restrict__ x, const float* __restrict__ y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { float v = x[i]; out[i] = v / (1.0f + __expf(-v)) * y[i]; }
}
)";

TEST(NvrtcCompile, GoodKernelGivesACubinForHopper) {
  CudaCompile result = nvrtc_compile(kSiluMul, {"silu_mul"}, 9, 0);
  ASSERT_TRUE(result.ok) << result.log;
  EXPECT_GT(result.cubin.size(), 100u);
  EXPECT_EQ(result.lowered_names.at("silu_mul"), "silu_mul");
}

TEST(NvrtcCompile, CxxLinkageKernelsResolveToTheirMangledSymbol) {
  CudaCompile result = nvrtc_compile(
      "__global__ void scale(float* p, float s) { p[threadIdx.x] *= s; }\n", {"scale"}, 8, 0);
  ASSERT_TRUE(result.ok) << result.log;
  EXPECT_NE(result.lowered_names.at("scale"), "scale") << "C++ linkage: NVRTC gives the mangled name";
  EXPECT_NE(result.lowered_names.at("scale").find("scale"), std::string::npos);
}

TEST(NvrtcCompile, SyntaxErrorIsALogNamingTheLine) {
  CudaCompile result = nvrtc_compile("__global__ void broken(float* p) {\n  p[0] = ;\n}\n", {"broken"}, 9, 0);
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.log.find("kernel.cu(2)"), std::string::npos) << result.log;
  EXPECT_NE(result.log.find("error"), std::string::npos) << result.log;
  EXPECT_TRUE(result.cubin.empty());
}

TEST(NvrtcCompile, LaunchedKernelThatIsNotDefinedIsNamed) {
  CudaCompile result = nvrtc_compile(kSiluMul, {"silu_mul", "missing_kernel"}, 9, 0);
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.log.find("missing_kernel"), std::string::npos) << result.log;
}

TEST(NvrtcCompile, VersionIsReported) { EXPECT_NE(nvrtc_version(), "?"); }

}  // namespace
}  // namespace kforge::harness
