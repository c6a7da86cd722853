// The eager baseline's caching CPU allocator on real libtorch: freed blocks come back, the
// previous allocator returns when the scope ends, tensors that outlive the scope are freed,
// and Reference::time_forward times under it. Run: ctest -R harness_steady_allocator.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <c10/core/CPUAllocator.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "worker/harness/reference.h"
#include "worker/harness/steady_allocator.h"

using namespace kforge::harness;

namespace {

constexpr int64_t kBigFloats = int64_t{8} << 20;  // 32 MiB: above glibc's largest mmap threshold

uintptr_t address(const at::Tensor& tensor) { return reinterpret_cast<uintptr_t>(tensor.data_ptr()); }

}  // namespace

TEST(SteadyAllocator, ScopeInstallsItselfAndPutsThePreviousAllocatorBack) {
  c10::Allocator* before = c10::GetCPUAllocator();
  {
    SteadyAllocatorScope outer;
    ASSERT_TRUE(outer.installed());
    c10::Allocator* caching = c10::GetCPUAllocator();
    EXPECT_NE(caching, before);
    {
      SteadyAllocatorScope inner;
      EXPECT_TRUE(inner.installed());
      EXPECT_EQ(c10::GetCPUAllocator(), caching);
    }
    EXPECT_EQ(c10::GetCPUAllocator(), caching) << "the outer scope is still open";
  }
  EXPECT_EQ(c10::GetCPUAllocator(), before);
  // The next scope installs it again (the first one's restore left the priority where it was).
  SteadyAllocatorScope again;
  EXPECT_TRUE(again.installed());
}

// libtorch 1.13's CPU gelu runs through oneDNN (ideep), whose buffers are taken with
// raw_allocate from whatever CPU allocator is current and given back with raw_deallocate through
// whatever is current then: a buffer from before a scope came back to the caching allocator,
// which aborted the worker ("freeing a block it does not own") on the second op it timed.
TEST(SteadyAllocator, BlockOfAnotherAllocatorFreedInsideAScopeGoesBackToIt) {
  void* before_scope = c10::GetCPUAllocator()->raw_allocate(int64_t{1} << 20);
  ASSERT_NE(before_scope, nullptr);
  {
    SteadyAllocatorScope scope;
    ASSERT_TRUE(scope.installed());
    c10::GetCPUAllocator()->raw_deallocate(before_scope);  // must not abort
    void* inside = c10::GetCPUAllocator()->raw_allocate(int64_t{1} << 20);
    ASSERT_NE(inside, nullptr);
    c10::GetCPUAllocator()->raw_deallocate(inside);
  }
  // The reverse: a block of the caching allocator freed by the default one after the scope;
  // malloc may then reuse its address for a block of another size, which must be tracked as such.
  void* from_scope = nullptr;
  {
    SteadyAllocatorScope scope;
    from_scope = c10::GetCPUAllocator()->raw_allocate(int64_t{3} << 20);
  }
  c10::GetCPUAllocator()->raw_deallocate(from_scope);
  SteadyAllocatorScope scope;
  at::Tensor small = at::empty({1024}, at::kFloat);
  at::Tensor big = at::empty({int64_t{4} << 20}, at::kFloat);
  small.fill_(1);
  big.fill_(2);
  EXPECT_EQ(small.sum().item<float>(), 1024.0f);
  EXPECT_EQ(big.sum().item<float>(), float(int64_t{8} << 20));
}

TEST(SteadyAllocator, GeluTimedAfterAnotherOpAndAfterItsOwnReference) {
  // What the worker did when it crashed: an op timed under a scope, then gelu run outside one
  // (the next op's reference outputs), then gelu timed under a scope.
  at::Tensor x = at::randn({1024, 1024});
  {
    SteadyAllocatorScope scope;
    for (int call_idx = 0; call_idx < 3; ++call_idx) (void)(x + x);
  }
  at::Tensor reference = at::gelu(x);
  SteadyAllocatorScope scope;
  for (int call_idx = 0; call_idx < 3; ++call_idx) EXPECT_TRUE(at::allclose(at::gelu(x), reference));
}

TEST(SteadyAllocator, FreedBlockComesBackForTheSameSizeAligned) {
  SteadyAllocatorScope scope;
  auto start = steady_allocator_stats();
  at::Tensor first = at::empty({kBigFloats}, at::kFloat);
  const uintptr_t block = address(first);
  EXPECT_EQ(block % 64, 0u) << "64-byte aligned, as libtorch's vectorised kernels assume";
  first = at::Tensor();
  EXPECT_EQ(steady_allocator_stats().cached_blocks, start.cached_blocks + 1);
  at::Tensor second = at::empty({kBigFloats}, at::kFloat);
  EXPECT_EQ(address(second), block) << "the same request gets the freed block back (the counters below say it was cached)";
  second = at::Tensor();
  at::Tensor slightly_smaller = at::empty({kBigFloats - 100}, at::kFloat);
  EXPECT_EQ(address(slightly_smaller), block) << "a request of the same 2 MiB class reuses it too";
  at::Tensor while_held = at::empty({kBigFloats}, at::kFloat);
  EXPECT_NE(address(while_held), block) << "a block in use is never handed out twice";
  auto end = steady_allocator_stats();
  EXPECT_EQ(end.allocations - start.allocations, 4);
  EXPECT_EQ(end.reuses - start.reuses, 2);
}

TEST(SteadyAllocator, OpsComputeCorrectlyAndReuseOutputsAcrossCalls) {
  at::Tensor x = at::randn({kBigFloats});
  at::Tensor y = at::randn({kBigFloats});
  at::Tensor expected = x + y;  // default allocator
  SteadyAllocatorScope scope;
  auto start = steady_allocator_stats();
  for (int call_idx = 0; call_idx < 3; ++call_idx) {
    at::Tensor out = x + y;
    EXPECT_TRUE(at::equal(out, expected));
  }
  // glibc often maps a fresh block at the address it just unmapped, so the address alone
  // proves nothing: the counters say the second and third outputs were cached blocks.
  EXPECT_GE(steady_allocator_stats().reuses - start.reuses, 2);
}

TEST(SteadyAllocator, TensorOutlivingTheScopeStaysValidAndIsFreedLater) {
  auto start = steady_allocator_stats();
  at::Tensor survivor;
  {
    SteadyAllocatorScope scope;
    survivor = at::full({kBigFloats}, 3.0f);
    at::Tensor freed_inside = at::empty({1024}, at::kFloat);
  }
  auto after_scope = steady_allocator_stats();
  EXPECT_EQ(after_scope.cached_blocks, 0) << "the scope's end frees the cache";
  EXPECT_EQ(after_scope.cached_bytes, 0);
  EXPECT_EQ(after_scope.live_blocks, start.live_blocks + 1) << "the survivor is still the allocator's";
  EXPECT_EQ(survivor.min().item<float>(), 3.0f) << "its memory is intact";
  EXPECT_EQ(survivor.max().item<float>(), 3.0f);
  survivor = at::Tensor();  // the deleter runs with no scope open: freed, not cached
  auto end = steady_allocator_stats();
  EXPECT_EQ(end.live_blocks, start.live_blocks);
  EXPECT_EQ(end.cached_blocks, 0);
}

TEST(SteadyAllocator, ThreadsAllocatingAtOnceGetDistinctBlocks) {
  auto start = steady_allocator_stats();
  {
    SteadyAllocatorScope scope;
    std::vector<std::thread> threads;
    std::vector<char> overlapped(4, 0);  // one byte per thread (vector<bool> would share words)
    for (size_t thread_idx = 0; thread_idx < 4; ++thread_idx)
      threads.emplace_back([thread_idx, &overlapped] {
        for (int round_idx = 0; round_idx < 200; ++round_idx) {
          // Each thread writes its own value and reads it back: a block handed to two
          // threads at once would show the other's value.
          const float mark = static_cast<float>(thread_idx + 1);
          at::Tensor tensor = at::full({(round_idx % 7 + 1) * 4096}, mark);
          std::this_thread::yield();
          if (tensor.min().item<float>() != mark || tensor.max().item<float>() != mark) overlapped[thread_idx] = 1;
        }
      });
    for (auto& thread : threads) thread.join();
    for (size_t thread_idx = 0; thread_idx < 4; ++thread_idx) EXPECT_EQ(overlapped[thread_idx], 0) << thread_idx;
  }
  auto end = steady_allocator_stats();
  EXPECT_EQ(end.live_blocks, start.live_blocks);
  EXPECT_GE(end.allocations - start.allocations, 800);
  EXPECT_GT(end.reuses - start.reuses, 0);
}

TEST(SteadyAllocator, EagerBaselineIsTimedUnderItOnlyWhenAsked) {
  kforge::spec::OpSpec spec;
  spec.name = "add";
  spec.source = "def forward(x, y):\n    return x + y\n";
  for (const char* name : {"x", "y"})
    spec.inputs.push_back({name, {1024, 1024}, kforge::spec::DType::float32, {kforge::spec::DistKind::normal, 0, 1}});
  std::string error;
  auto reference = Reference::compile(spec, error);
  ASSERT_TRUE(reference) << error;
  std::vector<std::vector<HostTensor>> rotations{make_inputs(spec, spec.main_shapes(), 1)};
  TimingProtocol protocol;
  protocol.max_seconds = 0.05;
  protocol.target_iqr = 0.5;
  c10::Allocator* before = c10::GetCPUAllocator();

  auto start = steady_allocator_stats();
  auto caching = reference->time_forward(rotations, 1, protocol, BaselineAllocator::caching);
  ASSERT_TRUE(caching.error.empty()) << caching.error;
  EXPECT_TRUE(caching.caching_allocator);
  auto after_caching = steady_allocator_stats();
  EXPECT_GE(after_caching.reuses - start.reuses, caching.runs - 1) << "every timed call after the first reuses";
  EXPECT_EQ(c10::GetCPUAllocator(), before);

  auto plain = reference->time_forward(rotations, 1, protocol, BaselineAllocator::default_cpu);
  ASSERT_TRUE(plain.error.empty()) << plain.error;
  EXPECT_FALSE(plain.caching_allocator);
  EXPECT_EQ(steady_allocator_stats().allocations, after_caching.allocations) << "the default allocator was used";
}
