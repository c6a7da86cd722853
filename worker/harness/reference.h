// Reference runner: normalises a user's TorchScript (F.x -> torch.x), compiles it
// with libtorch, makes seeded inputs from the op spec and runs it. The only
// libtorch-facing header of the harness; it exposes no torch types.
// Test: ctest -R harness_reference.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "spec/op_spec.h"
#include "worker/harness/steady_allocator.h"
#include "worker/harness/timing.h"

namespace kforge::harness {

//! A dense, contiguous host tensor: what crosses between libtorch, the sandbox and the checker.
struct HostTensor {
  spec::DType dtype = spec::DType::float32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;  //!< numel * dtype_size bytes, row-major

  //! Number of elements.
  int64_t numel() const { return spec::shape_numel(shape); }
  //! Element `index` converted to double (float16/bfloat16 widened, bool as 0/1).
  double value_at(int64_t index) const;
};

//! The result of normalize_source: rewritten source, what was rewritten, or an error.
struct NormalizedSource {
  std::string source;                 //!< same line count as the input (line numbers stay valid)
  std::vector<std::string> rewrites;  //!< e.g. "line 2: F.gelu -> torch.gelu"
  std::string error;                  //!< non-empty when the source cannot work (names the line)
};

//! Rewrites `F.x(`, `torch.nn.functional.x(`, `nn.functional.x(` to the libtorch builtin
//! spelling and blanks pasted `import` lines; names with no builtin get an error saying what works.
NormalizedSource normalize_source(const std::string& source);

//! Output of one reference run: tensors, or an error message (exception text).
struct ReferenceRun {
  std::vector<HostTensor> outputs;
  std::string error;  //!< empty on success
  bool out_of_memory = false;  //!< the error was an allocation failure
};

//! A compiled reference op. Create with Reference::compile; run as often as needed.
class Reference {
 public:
  //! Compiles spec.source (after normalize_source). On failure returns nullptr and sets
  //! `error` to a message naming the line ("line 2: undefined value foo ...").
  static std::unique_ptr<Reference> compile(const spec::OpSpec& spec, std::string& error);
  ~Reference();

  //! Runs forward() on the inputs (order of spec.inputs). Never throws.
  ReferenceRun run(const std::vector<HostTensor>& inputs) const;
  //! Output shapes and dtypes of forward() on `shapes` (inputs not named keep their main
  //! shape), run on libtorch's meta device: nothing is computed or allocated, so an op's
  //! declared shapes give its outputs even when they are too large to run. The outputs'
  //! data is empty; `error` is set when an op has no meta kernel. Never throws.
  ReferenceRun output_shapes(const spec::OpSpec& spec, const spec::ShapeSet& shapes) const;
  //! Number of forward() parameters.
  size_t arity() const;

  //! Times forward() with the kernel timer's protocol (timing.h), rotating through
  //! `rotations` (several copies of the inputs, so caches do not flatter).
  struct Timing {
    double median_ms = 0, min_ms = 0, iqr_ms = 0;  //!< copies of record's, for older callers
    int runs = 0;
    TimingRecord record;  //!< everything the protocol measured
    bool caching_allocator = false;  //!< tensors came from the caching allocator (steady_allocator.h)
    std::string error;
  };
  //! Times forward() with `threads` intra-op threads (0 keeps the current setting), its tensors
  //! from `allocator` (caching: a SteadyAllocatorScope around the timed runs only).
  Timing time_forward(const std::vector<std::vector<HostTensor>>& rotations, int threads,
                      const TimingProtocol& protocol,
                      BaselineAllocator allocator = BaselineAllocator::caching) const;
  //! The same with the default protocol (and the caching allocator) but this window length and IQR target.
  Timing time_forward(const std::vector<std::vector<HostTensor>>& rotations, int threads, double max_seconds,
                      double target_iqr_fraction) const;

 private:
  Reference();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

//! Seeded inputs for `shapes` (inputs not in `shapes` use their main shape), from each input's dist.
std::vector<HostTensor> make_inputs(const spec::OpSpec& spec, const spec::ShapeSet& shapes, uint64_t seed);

//! libtorch's version string, e.g. "1.13.1".
std::string torch_version_string();
//! libtorch's current intra-op thread count.
int torch_threads();
//! Sets libtorch's intra-op thread count (and OpenBLAS's, which libtorch does not reach).
void torch_set_threads(int threads);
//! The BLAS behind libtorch's matmuls: OpenBLAS's config ("OpenBLAS 0.3.21 ... Zen"), or "not OpenBLAS (...)".
std::string blas_description();
//! OpenBLAS's thread count, or 0 when the loaded BLAS is not OpenBLAS.
int blas_threads();

}  // namespace kforge::harness
