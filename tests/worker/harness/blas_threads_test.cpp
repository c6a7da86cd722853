// The eager baseline's BLAS threads follow the harness's matched-thread setting:
// libtorch's at::set_num_threads does not reach OpenBLAS's own pool, so the harness
// sets it too. Skipped where libblas.so.3 is not OpenBLAS. Run: ctest -R harness_blas.
#include <gtest/gtest.h>

#include "worker/harness/reference.h"

using namespace kforge::harness;
using namespace kforge::spec;

namespace {

bool openblas_loaded() { return blas_description().rfind("OpenBLAS", 0) == 0; }

OpSpec matmul_spec() {
  OpSpec spec;
  spec.name = "mm";
  spec.source = "def forward(a: Tensor, b: Tensor) -> Tensor:\n    return torch.mm(a, b)\n";
  spec.inputs.push_back({"a", {64, 64}, DType::float32, {DistKind::normal, 0, 1}});
  spec.inputs.push_back({"b", {64, 64}, DType::float32, {DistKind::normal, 0, 1}});
  return spec;
}

}  // namespace

TEST(BlasThreads, DescriptionNamesTheLoadedBlas) {
  auto description = blas_description();
  EXPECT_FALSE(description.empty());
  if (openblas_loaded()) EXPECT_GT(blas_threads(), 0) << description;
  else EXPECT_EQ(blas_threads(), 0) << description;
}

TEST(BlasThreads, TorchSetThreadsAlsoSetsOpenBlas) {
  if (!openblas_loaded()) GTEST_SKIP() << "libblas.so.3 is not OpenBLAS here: " << blas_description();
  int saved = torch_threads();
  torch_set_threads(1);
  EXPECT_EQ(blas_threads(), 1);
  EXPECT_EQ(torch_threads(), 1);
  torch_set_threads(3);
  EXPECT_EQ(blas_threads(), 3);
  torch_set_threads(saved);
}

TEST(BlasThreads, TimeForwardRestoresTheThreadCounts) {
  if (!openblas_loaded()) GTEST_SKIP() << "libblas.so.3 is not OpenBLAS here: " << blas_description();
  auto spec = matmul_spec();
  std::string error;
  auto reference = Reference::compile(spec, error);
  ASSERT_TRUE(reference) << error;
  torch_set_threads(3);
  auto timing = reference->time_forward({make_inputs(spec, spec.main_shapes(), 1)}, 1, 0.05, 0.5);
  EXPECT_TRUE(timing.error.empty()) << timing.error;
  EXPECT_GT(timing.runs, 0);
  EXPECT_EQ(blas_threads(), 3) << "the caller's OpenBLAS threads come back after timing";
  EXPECT_EQ(torch_threads(), 3);
}
