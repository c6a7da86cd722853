// Output comparison (worker/harness/compare.h): the tolerance rule per dtype, NaN and
// infinities, the first bad element and the count. Run: ctest -R harness_compare.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "worker/harness/compare.h"

using namespace kforge::harness;
using kforge::spec::DType;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

HostTensor floats(const std::vector<float>& values) {
  HostTensor tensor;
  tensor.dtype = DType::float32;
  tensor.shape = {static_cast<int64_t>(values.size())};
  tensor.data.resize(values.size() * 4);
  std::memcpy(tensor.data.data(), values.data(), tensor.data.size());
  return tensor;
}

CompareResult compare(const std::vector<float>& expected, const std::vector<float>& actual) {
  return compare_output(floats(expected), reinterpret_cast<const uint8_t*>(actual.data()), 1e-5, 1e-3);
}

}  // namespace

TEST(Compare, WithinToleranceMatchesAndOutsideDoesNot) {
  EXPECT_TRUE(compare({1.0f, -2.0f, 100.0f}, {1.0f, -2.0f, 100.05f}).ok);  // 0.05 <= 1e-5 + 0.1
  auto bad = compare({1.0f, -2.0f, 100.0f}, {1.0f, -2.01f, 100.2f});
  EXPECT_FALSE(bad.ok);
  EXPECT_EQ(bad.first_bad, 1);
  EXPECT_EQ(bad.bad_count, 2);
  EXPECT_FLOAT_EQ(bad.expected, -2.0);
  EXPECT_FLOAT_EQ(bad.actual, -2.01f);
}

TEST(Compare, NaNMatchesOnlyNaNAndInfinityOnlyItself) {
  EXPECT_TRUE(compare({kNaN, kInf, -kInf}, {kNaN, kInf, -kInf}).ok);
  EXPECT_FALSE(compare({kNaN}, {0.0f}).ok);
  EXPECT_FALSE(compare({0.0f}, {kNaN}).ok);
  // An expected infinity is not matched by a finite value, however large the relative tolerance makes it.
  EXPECT_FALSE(compare({kInf}, {1e30f}).ok);
  EXPECT_FALSE(compare({1e30f}, {kInf}).ok);
  EXPECT_FALSE(compare({kInf}, {-kInf}).ok);
}

TEST(Compare, IntegersAndBooleansCompareExactly) {
  HostTensor ints;
  ints.dtype = DType::int64;
  ints.shape = {2};
  std::vector<int64_t> want{5, 1LL << 40};
  ints.data.resize(16);
  std::memcpy(ints.data.data(), want.data(), 16);
  std::vector<int64_t> same = want, off{5, (1LL << 40) + 1};
  EXPECT_TRUE(compare_output(ints, reinterpret_cast<const uint8_t*>(same.data()), 1, 1).ok);
  EXPECT_FALSE(compare_output(ints, reinterpret_cast<const uint8_t*>(off.data()), 1, 1).ok);
}

TEST(Compare, HalfAndBfloat16AreWidenedBeforeTheTolerance) {
  HostTensor half;
  half.dtype = DType::float16;
  half.shape = {2};
  std::vector<uint16_t> want{0x3c00, 0x7c00};  // 1.0, +inf
  half.data.resize(4);
  std::memcpy(half.data.data(), want.data(), 4);
  std::vector<uint16_t> close{0x3c01, 0x7c00}, infinite_off{0x3c00, 0x7bff};  // 1.00098; 65504
  EXPECT_TRUE(compare_output(half, reinterpret_cast<const uint8_t*>(close.data()), 1e-3, 1e-3).ok);
  EXPECT_FALSE(compare_output(half, reinterpret_cast<const uint8_t*>(infinite_off.data()), 1e-3, 1e-3).ok);
  HostTensor bf16 = half;
  bf16.dtype = DType::bfloat16;
  std::vector<uint16_t> bf_want{0x3f80, 0x4000};  // 1.0, 2.0
  std::memcpy(bf16.data.data(), bf_want.data(), 4);
  std::vector<uint16_t> bf_off{0x3f80, 0x4040};  // 1.0, 3.0
  EXPECT_TRUE(compare_output(bf16, reinterpret_cast<const uint8_t*>(bf_want.data()), 1e-3, 1e-3).ok);
  auto bad = compare_output(bf16, reinterpret_cast<const uint8_t*>(bf_off.data()), 1e-3, 1e-3);
  EXPECT_EQ(bad.first_bad, 1);
  EXPECT_DOUBLE_EQ(bad.actual, 3.0);
}

// A 64 MiB output (compared in slices on several threads) with two bad elements in
// different slices: the first is reported, both counted. (Its speed is measured by
// bench/gpu/harness_bench.py, phases_ms.compare.)
TEST(Compare, LargeOutputReportsItsFirstBadElementAcrossSlices) {
  std::vector<float> values(16 << 20);
  for (size_t idx = 0; idx < values.size(); ++idx) values[idx] = std::sin(float(idx));
  HostTensor expected = floats(values);
  values.back() += 1;
  values[3 << 20] += 1;
  auto result = compare_output(expected, reinterpret_cast<const uint8_t*>(values.data()), 1e-5, 1e-5);
  EXPECT_EQ(result.first_bad, int64_t{3} << 20);
  EXPECT_EQ(result.bad_count, 2);
}
