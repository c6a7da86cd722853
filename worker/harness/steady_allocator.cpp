// The caching CPU allocator of the eager baseline (steady_allocator.h): blocks freed while a
// scope is open go to size-class free lists and are handed out again. A libtorch translation unit.
// Test: ctest -R harness_steady_allocator.
#include "worker/harness/steady_allocator.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace kforge::harness {

namespace {

constexpr size_t kAlignment = 64;                      // c10's gAlignment: what vectorised CPU kernels assume
constexpr size_t kPowerOfTwoLimit = size_t{1} << 20;   // classes are powers of two up to 1 MiB ...
constexpr size_t kLargeStep = size_t{2} << 20;         // ... then multiples of 2 MiB

// A request of n bytes gets a block of its class, so a block freed by one call fits the same
// request of the next. Small blocks waste at most half; big ones at most 2 MiB (an 8M-float
// output, 32 MiB, is its own class).
size_t size_class(size_t n) {
  if (n > kPowerOfTwoLimit) return (n + kLargeStep - 1) / kLargeStep * kLargeStep;
  size_t size = kAlignment;
  while (size < n) size <<= 1;
  return size;
}

// How a block another CPU allocator handed out is freed: the raw deleter of the allocator the
// first scope replaced (libtorch's default: report and free), else free(). Set once, never reset.
std::atomic<c10::DeleterFnPtr> foreign_deleter{nullptr};
void release_block(void* block);

// Every block the allocator handed out and every cached one. Process-lived: a tensor
// allocated inside a scope may be freed long after it, even at exit.
class BlockPool {
 public:
  void* take(size_t n) {
    const size_t size = size_class(n);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.allocations;
      auto& cached = free_[size];
      if (!cached.empty()) {
        void* block = cached.back();
        cached.pop_back();
        --stats_.cached_blocks;
        stats_.cached_bytes -= static_cast<int64_t>(size);
        ++stats_.reuses;
        live_[block] = size;
        return block;
      }
    }
    void* block = nullptr;
    if (posix_memalign(&block, kAlignment, size) != 0) {
      drop_cached();  // blocks of other classes are what a failed request needs first
      if (posix_memalign(&block, kAlignment, size) != 0) block = nullptr;
    }
    if (!block) return nullptr;
    std::lock_guard<std::mutex> lock(mutex_);
    // Assigned, not emplaced: a block of ours that another allocator's deleter freed (below)
    // leaves a stale entry, and malloc may hand its address out again with another size.
    live_[block] = size;
    return block;
  }

  void give_back(void* block) {
    std::unique_lock<std::mutex> lock(mutex_);
    auto found = live_.find(block);
    if (found == live_.end()) {
      // Not ours: memory taken with raw_allocate from the allocator that was current then and
      // given back with raw_deallocate while this one is (oneDNN's buffers, which libtorch 1.13's
      // CPU gelu keeps across calls through ideep, free that way). It goes back where it came from.
      lock.unlock();
      c10::DeleterFnPtr deleter = foreign_deleter.load();
      if (deleter && deleter != &release_block) deleter(block);
      else std::free(block);
      return;
    }
    const size_t size = found->second;
    live_.erase(found);
    if (!caching_) {
      lock.unlock();
      std::free(block);
      return;
    }
    free_[size].push_back(block);
    ++stats_.cached_blocks;
    stats_.cached_bytes += static_cast<int64_t>(size);
  }

  //! Off: the cached blocks are freed, and so is every block given back later.
  void set_caching(bool on) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      caching_ = on;
    }
    if (!on) drop_cached();
  }

  SteadyAllocatorStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    SteadyAllocatorStats stats = stats_;
    stats.live_blocks = static_cast<int64_t>(live_.size());
    return stats;
  }

 private:
  void drop_cached() {
    std::unordered_map<size_t, std::vector<void*>> dropped;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      dropped.swap(free_);
      stats_.cached_blocks = 0;
      stats_.cached_bytes = 0;
    }
    for (auto& [size, blocks] : dropped)
      for (void* block : blocks) std::free(block);
  }

  std::mutex mutex_;
  bool caching_ = false;
  std::unordered_map<size_t, std::vector<void*>> free_;  // size class -> cached blocks
  std::unordered_map<void*, size_t> live_;               // handed-out block -> its size class
  SteadyAllocatorStats stats_;
};

BlockPool& pool() {
  static auto* blocks = new BlockPool();  // never destroyed (see BlockPool)
  return *blocks;
}

void release_block(void* block) { pool().give_back(block); }

c10::DataPtr take_block(size_t n) {
  const c10::Device cpu(c10::DeviceType::CPU);
  if (n == 0) return {nullptr, nullptr, &release_block, cpu};
  void* block = pool().take(n);
  // "can't allocate memory" is what Reference::run reads as an out-of-memory error.
  TORCH_CHECK(block, "kforge steady allocator: can't allocate memory: you tried to allocate ", n, " bytes");
  return {block, block, &release_block, cpu};  // context = data: a "simple" DataPtr, raw_deleter holds
}

// c10::Allocator's interface differs between the libtorch versions kforge builds against
// (c10/core/Allocator.h): libtorch 1.13 (Debian 12) declares `DataPtr allocate(size_t n) const`
// and no copy_data; PyTorch 2.x (2.11 on the GPU hosts) a non-const `DataPtr allocate(size_t n)`
// and a pure virtual `void copy_data(void* dest, const void* src, std::size_t count) const`.
// Both are read from the header rather than assumed from version numbers, and every override
// says `override`: a third shape is a compile error, never a silently unused overload.
template <typename Base>
constexpr bool kConstAllocate =
    std::is_same_v<decltype(&Base::allocate), c10::DataPtr (Base::*)(size_t) const>;

template <typename Base, typename = void>
struct HasCopyData : std::false_type {};
template <typename Base>
struct HasCopyData<Base, std::void_t<decltype(&Base::copy_data)>> : std::true_type {};

template <typename Base, bool kConst = kConstAllocate<Base>>
struct AllocateOverride : Base {
  c10::DataPtr allocate(size_t n) override { return take_block(n); }
};
template <typename Base>
struct AllocateOverride<Base, true> : Base {
  c10::DataPtr allocate(size_t n) const override { return take_block(n); }
};

template <typename Base, bool kHasCopyData>
struct CopyDataOverride : Base {};
template <typename Base>
struct CopyDataOverride<Base, true> : Base {
  void copy_data(void* dest, const void* src, std::size_t count) const override { std::memcpy(dest, src, count); }
};

template <typename Base>
struct CachingAllocator final : CopyDataOverride<AllocateOverride<Base>, HasCopyData<Base>::value> {
  c10::DeleterFnPtr raw_deleter() const override { return &release_block; }
};

// The PyTorch 2.x shape is compiled on every host, so a 1.13 build checks it too: its virtual
// members as c10/core/Allocator.h declares them in 2.3 onwards (read in 2.8's header).
struct Torch2AllocatorShape {
  virtual ~Torch2AllocatorShape() = default;
  virtual c10::DataPtr allocate(size_t n) = 0;
  virtual c10::DeleterFnPtr raw_deleter() const { return nullptr; }
  virtual void copy_data(void* dest, const void* src, std::size_t count) const = 0;
};
static_assert(!std::is_abstract_v<CachingAllocator<Torch2AllocatorShape>>,
              "the caching allocator implements the PyTorch 2.x allocator interface");

c10::Allocator& caching_allocator() {
  static auto* allocator = new CachingAllocator<c10::Allocator>();  // never destroyed: DataPtrs outlive scopes
  return *allocator;
}

std::mutex scope_mutex;
int open_scopes = 0;                    // guarded by scope_mutex
c10::Allocator* previous_allocator = nullptr;  // what the first scope replaced

}  // namespace

SteadyAllocatorStats steady_allocator_stats() { return pool().stats(); }

SteadyAllocatorScope::SteadyAllocatorScope() {
  std::lock_guard<std::mutex> lock(scope_mutex);
  if (open_scopes++ == 0) {
    previous_allocator = c10::GetCPUAllocator();
    if (previous_allocator != &caching_allocator() && !foreign_deleter.load())
      foreign_deleter.store(previous_allocator->raw_deleter());
    pool().set_caching(true);
    // Priority 0, libtorch's own default allocator's: an allocator set with a higher one stays
    // (installed() says so), and putting the previous one back needs no higher priority either.
    c10::SetCPUAllocator(&caching_allocator(), 0);
  }
  installed_ = c10::GetCPUAllocator() == &caching_allocator();
}

SteadyAllocatorScope::~SteadyAllocatorScope() {
  std::lock_guard<std::mutex> lock(scope_mutex);
  if (--open_scopes > 0) return;
  if (c10::GetCPUAllocator() == &caching_allocator()) c10::SetCPUAllocator(previous_allocator, 0);
  pool().set_caching(false);
}

}  // namespace kforge::harness
