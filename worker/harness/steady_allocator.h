// A caching CPU allocator for timing libtorch eager as a long-running process runs it: freed
// blocks are kept and handed out again, so outputs are not fresh, page-faulted mappings per call.
// Torch-free header; the allocator lives in steady_allocator.cpp. Test: ctest -R harness_steady_allocator.
#pragma once

#include <cstdint>
#include <string>

namespace kforge::harness {

//! Where the CPU eager baseline's tensors come from while it is timed.
enum class BaselineAllocator {
  caching,      //!< SteadyAllocatorScope: freed blocks reused (a long-running process's steady state)
  default_cpu,  //!< libtorch's default CPU allocator: glibc malloc, big blocks fresh mappings on every call
};

//! "caching" or "default": the spelling of `kforge-worker check --baseline-allocator`.
inline const char* baseline_allocator_name(BaselineAllocator allocator) {
  return allocator == BaselineAllocator::caching ? "caching" : "default";
}

//! Parses "caching" or "default"; false (and `allocator` untouched) for anything else.
inline bool parse_baseline_allocator(const std::string& name, BaselineAllocator& allocator) {
  if (name == "caching") allocator = BaselineAllocator::caching;
  else if (name == "default") allocator = BaselineAllocator::default_cpu;
  else return false;
  return true;
}

//! Counters of the caching allocator, for tests and diagnostics.
struct SteadyAllocatorStats {
  int64_t allocations = 0;   //!< blocks handed out (requests of more than 0 bytes) since the process started
  int64_t reuses = 0;        //!< ... of which came from the free lists
  int64_t cached_blocks = 0; //!< blocks in the free lists now
  int64_t cached_bytes = 0;  //!< their bytes
  int64_t live_blocks = 0;   //!< blocks handed out and not yet freed
};

//! The caching allocator's counters now.
SteadyAllocatorStats steady_allocator_stats();

//! While one is alive, libtorch's CPU allocator (c10::GetCPUAllocator(), what at::empty uses)
//! is the caching allocator; the last scope to end puts the previous allocator back and frees
//! the cached blocks. Tensors allocated inside may outlive the scope: their memory is freed
//! when they are. Scopes may nest or overlap across threads (a count). Swapping libtorch's
//! allocator is process-wide and not synchronised with readers, like c10::SetCPUAllocator
//! itself: open a scope where no other thread depends on which allocator it gets (the
//! allocator is thread-safe, so a tensor another thread allocates meanwhile is still correct).
class SteadyAllocatorScope {
 public:
  SteadyAllocatorScope();
  ~SteadyAllocatorScope();
  SteadyAllocatorScope(const SteadyAllocatorScope&) = delete;
  SteadyAllocatorScope& operator=(const SteadyAllocatorScope&) = delete;

  //! False when libtorch kept another allocator (one set with a higher priority): nothing changed.
  bool installed() const { return installed_; }

 private:
  bool installed_ = false;
};

}  // namespace kforge::harness
