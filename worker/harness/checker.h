// The public harness API: check one candidate kernel program against an op like a
// hostile reviewer (format, rules, compile, K seeded trials + a secret seed + extra
// shapes in a sandboxed child, timing against libtorch). A Checker caches the
// reference outputs, baseline timing and results per op; check_candidate is the
// one-shot form. Test: ctest -R 'harness_(checker|adversarial)'.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spec/op_spec.h"
#include "worker/harness/steady_allocator.h"

namespace kforge::harness {

//! The outcome ladder: each later outcome means every earlier stage passed.
enum class Outcome { format_error, rule_violation, compile_error, runtime_error, timeout, wrong_output, correct };

//! "format_error", "rule_violation", ..., "correct".
std::string outcome_name(Outcome outcome);

struct CheckResult;
class ChildPool;

//! A result cache that outlives one Checker (e.g. a database table shared by every job
//! and worker), keyed by CheckResult::cache_key plus the options that change results.
class ResultStore {
 public:
  virtual ~ResultStore() = default;
  //! The stored result JSON (CheckResult::to_json()) for `key`, or nullopt. Must not throw.
  virtual std::optional<std::string> load(const std::string& key) = 0;
  //! Stores `result` (its to_json()) under `key` (first writer wins). Must not throw.
  virtual void save(const std::string& key, const CheckResult& result) = 0;
};

//! Knobs for checking; defaults suit a worker on PoCL.
struct CheckOptions {
  std::string target = "opencl";     //!< kernel language: opencl, cuda (NVRTC + driver API) or triton (Python runner)
  std::string device;                //!< opencl: a device name substring, "cpu" or "gpu" ("" = first device); cuda: index or name
  int trials = 5;                    //!< correctness trials with fresh seeds on the main shapes
  uint64_t secret_seed = 0;          //!< the worker's secret seed (0: KFORGE_SECRET_SEED, else random per process)
  bool check_extra_shapes = true;    //!< also one trial per extra shape set
  bool determinism = true;           //!< run the first trial twice; both runs must match
  bool time = true;                  //!< time correct candidates and the libtorch baseline
  double time_budget_s = 1.0;        //!< per timed side and window: stop repeating after this long
  double gpu_time_budget_s = 0;      //!< > 0: time_budget_s when timed on a GPU (CUDA events; no CPU contention)
  double target_iqr = 0.02;          //!< ... or once IQR/median is below this
  int timing_attempts = 2;           //!< timing windows per side at most; another only after a disturbed one
  double max_contention = 0.25;      //!< other processes using more cores than this during a window = disturbed
  double settle_tolerance = 0.05;    //!< warm-up ends when consecutive block medians agree within this
  double suspicious_speedup = 10.0;  //!< speedups above this are flagged `suspicious`
  double build_timeout_s = 60;       //!< wall limit for the OpenCL build
  double trial_timeout_s = 10;       //!< wall limit per correctness run
  double sandbox_cpu_s = 300;        //!< RLIMIT_CPU of a sandbox child (all threads)
  int64_t sandbox_memory_bytes = int64_t{32} << 30;  //!< RLIMIT_DATA of a sandbox child (capped at 3/4 of RAM)
  int64_t max_scratch_bytes = int64_t{1} << 30;      //!< scratch limit (program_too_large)
  bool cache = true;                 //!< reuse results for identical programs
  std::shared_ptr<ResultStore> result_store;  //!< persistent cache across Checkers (with `cache`); null = memory only
  std::string build_options = "-cl-std=CL1.2";       //!< OpenCL compiler options
  std::string sandbox_binary;        //!< default: kforge-sandbox next to this executable
  int64_t llc_bytes = 0;             //!< last-level cache size for rotation (0: read from sysfs)
  std::string python;                //!< the runner's interpreter (torch + triton); default $KFORGE_PYTHON, else python3
  std::string runner_script;         //!< default: runner/kforge_runner.py next to this executable
  bool compile_baseline = true;      //!< on a GPU, also time torch.compile (default mode) of the op
  //! On a CPU, where eager's tensors come from while it is timed: caching (freed blocks reused, a
  //! long-running process's steady state) or default_cpu (glibc malloc, page-faulted per call).
  BaselineAllocator baseline_allocator = BaselineAllocator::caching;
  //! Polled (every 100 ms) while a sandbox child works: true kills it and ends the check
  //! as a timeout "stopped" (never cached); a job's cancel or shutdown. Empty = never.
  std::function<bool()> stop_requested;
  std::string timing_lock;       //!< a file to flock while timing, so Checkers side by side never time at once
  //! Children started ahead of need: 0 = 1 on a CPU, 2 on a GPU (where start-up, a CUDA
  //! context or torch's import, takes longer than one candidate's check).
  int spares = 0;
  //! How pre-started children keep out of timed runs: "settle" (all ready before timing;
  //! what a CPU needs, where their start-up would steal cores), "gate" (they initialise
  //! their device only while nothing is timed: the GPU gate, sandbox_policy.h), "overlap"
  //! (no rule; for measuring what the rule costs). "" = settle on a CPU, gate on a GPU.
  std::string spare_policy;
  //! Pre-started children to take before starting any (a worker's pool, child_pool.h): the
  //! first candidate child, the spares and the reference runners come warm and get this op's
  //! arena on take. Null: every child is started for this Checker.
  std::shared_ptr<ChildPool> child_pool;
  //! Reference outputs and the eager baseline from the Python runner (the GPU path) even on a
  //! CPU device: tests of that path on a machine without a GPU. Timings are then not a CPU claim.
  bool runner_reference = false;
  //! Checker::prefetch also for triton in Triton's CPU interpreter (which compiles nothing
  //! ahead): tests of the prefetched child's path on a machine without a GPU.
  bool prefetch_on_cpu = false;
  //! Candidates Checker::prefetch keeps compiled ahead besides the one about to be checked
  //! (GPU, triton); warm_pool keeps this many plus one triton candidate runners, so each is
  //! taken started. A generation prefetches that many candidates at once (worker/jobs/generate.cpp).
  int prefetch_ahead = 1;
  //! kforge-sandbox children build and run a trivial kernel before they say ready, so a
  //! pre-started child pays the compiler's start before its candidate arrives. In a jail
  //! PoCL's kernel cache is private and empty, so that build is a full compile per child:
  //! training's checks (16 at once, every child on the critical path) turn it off.
  bool warm_up = true;
};

//! Where and how outputs first differed.
struct Mismatch {
  std::string trial;        //!< "trial 2 of 5", "secret-seed trial", "extra shapes 1"
  std::string shapes;       //!< "x=[1023, 777] y=[1023, 777]"
  std::string output;       //!< "out" or "out1"
  int64_t index = -1;       //!< flat index
  std::string coords;       //!< "[17, 3]"
  double expected = 0;
  double actual = 0;
  bool values_hidden = false;  //!< true for the secret-seed trial (values would leak its inputs)
  int64_t bad_count = 0;
  int64_t numel = 0;
};

//! Robust timing summary of one side (the protocol is in timing.h).
struct TimingStats {
  double median_ms = 0, min_ms = 0, iqr_ms = 0;
  int runs = 0;
  double kernel_median_ms = 0;  //!< device time from profiling events (kernel side only)
  int rotations = 1;            //!< input/output sets rotated through
  int warmup_runs = 0;          //!< runs before the measured window
  bool settled = false;         //!< warm-up ended because consecutive timings agreed (not at its cap)
  int attempts = 1;             //!< measurement windows run (more than 1: earlier ones were disturbed)
  double others_cores = 0;      //!< CPU other processes used during the kept window, in cores (-1 unknown)
  bool disturbed = false;       //!< even the kept window had more contention than max_contention
};

//! What the timings were measured on.
struct Environment {
  std::string device, platform, device_version, driver_version, opencl_c_version;
  int compute_units = 0;
  std::string torch_version;
  int torch_threads = 0;     //!< threads of the libtorch baseline (CPU only; = compute_units; OpenBLAS's too)
  std::string blas;          //!< the BLAS behind eager matmuls (blas_description())
  double load_average = 0;   //!< 1-minute load when the check ran
  std::string target;        //!< opencl, cuda or triton
  bool gpu = false;          //!< checked and timed on a GPU (reference, baselines and candidate)
  std::string baseline;      //!< what the speedups are against, in words ("PyTorch CUDA eager ...")
  std::string triton_version, cuda_version;  //!< the GPU runners' (empty on CPU)
  std::string gpu_clocks;    //!< SM / memory clocks when the baselines were timed (nvidia-smi's view)
  double reference_max_abs_diff = 0;  //!< GPU: largest |GPU reference - CPU libtorch reference| over the trials
  std::string sandbox;       //!< the candidate's sandbox layers, and any that could not be applied (and why)
};

//! Everything known about one candidate.
struct CheckResult {
  Outcome outcome = Outcome::format_error;
  std::string message;                 //!< what to fix (empty when correct)
  std::string rule;                    //!< rule name for rule_violation
  std::optional<Mismatch> mismatch;    //!< for wrong_output
  std::optional<TimingStats> kernel;   //!< for correct (when timed)
  std::optional<TimingStats> baseline; //!< eager (libtorch on the CPU; PyTorch CUDA eager on a GPU), same protocol
  std::optional<TimingStats> baseline_compile;  //!< GPU: torch.compile (default mode) of the op, same protocol
  double speedup = 0;                  //!< baseline.median / kernel.median (speedup_vs_eager in JSON too)
  double speedup_vs_compile = 0;       //!< baseline_compile.median / kernel.median (0: not measured)
  bool suspicious = false;             //!< speedup above the sanity bound
  bool weak_test = false;              //!< the reference output is near-constant
  bool cached = false;                 //!< served from the result cache
  int trials_passed = 0;
  std::string program_hash;            //!< SHA-256 of the program text
  std::string cache_key;               //!< op hash : program hash : device
  Environment environment;
  double compile_ms = 0, run_ms = 0, time_ms = 0, overhead_ms = 0, total_ms = 0;
  double sandbox_wait_ms = 0;  //!< part of overhead: waiting for the pre-started sandbox to be ready
  double spare_wait_ms = 0;    //!< part of overhead: before timing, waiting for the next sandbox to finish starting
  double child_ms = 0;         //!< wall time waiting on the sandbox's replies (includes compile and run)
  double compare_ms = 0;       //!< part of overhead: comparing outputs with the reference in the parent
  double io_ms = 0;            //!< part of overhead: the child loading inputs, reading outputs back, checking inputs
  double time_kernel_ms = 0;   //!< part of time: the candidate's timed runs (the wait for the timing window included)
  double time_eager_ms = 0;    //!< part of time: timing the eager baseline (0 when an earlier check's timing is reused)
  double time_compile_ms = 0;  //!< part of time: torch.compile's first compile (or the wait for it) and its timing
  //! Part of run: the time the candidate's Triton kernels took to compile and load in its
  //! runner during the trials (JITFunction._do_compile, CompiledKernel._init_handles).
  double jit_ms = 0;
  //! Triton's JIT of this candidate's kernels done ahead, in its child while the previous
  //! candidate was checked (Checker::prefetch): background time, in none of the phases above.
  double prepared_ms = 0;

  //! JSON object with every field above.
  std::string to_json() const;
  //! Parses to_json()'s output back; nullopt if it is not such an object.
  static std::optional<CheckResult> from_json(const std::string& text);
};

//! Where Checker::create's time went, in ms: a generation's `phases_ms.setup` (docs/jobs.md).
//! The waits are what the creating thread waited for; work a child did in the background
//! while something else ran does not show.
struct SetupPhases {
  double reference_compile_ms = 0;     //!< the op's TorchScript compiled by libtorch
  double inputs_ms = 0;                //!< every trial's inputs drawn from their distributions
  double reference_ms = 0;             //!< the CPU reference run on every trial (outputs; a cross-check on a GPU)
  double arena_ms = 0;                 //!< inputs written to the sealed arena and mapped
  double sandbox_start_ms = 0;         //!< waiting for the first candidate child to be ready and attached
  double gpu_reference_start_ms = 0;   //!< waiting for the GPU reference runner to be ready and attached
  double gpu_reference_ms = 0;         //!< the op built and run on every trial on the GPU
  double total_ms = 0;                 //!< all of Checker::create
  int pooled_children = 0;             //!< children taken warm from a ChildPool (child_pool.h) instead of started

  //! {"reference_compile": ms, ..., "total": ms, "pooled_children": n}
  std::string to_json() const;
};

//! Results with this outcome are kept by a ResultStore: all but timeouts (which can be
//! the machine's fault) and harness errors (ours, not the candidate's).
bool result_is_storable(const CheckResult& result);

//! The key a ResultStore uses: cache_key plus a fingerprint of the options that change a
//! result (trials, extra shapes, determinism, timing, build options, harness version).
std::string result_store_key(const CheckResult& result, const CheckOptions& options);

//! TorchInductor's Triton kernels for the op as one more triton candidate (issue 16: torch.compile
//! as a teacher). Empty `source` and the `reason` when there is none.
struct InductorHarvest {
  std::string source;      //!< the candidate module (worker/harness/runner/inductor_rewrite.py's format)
  std::string reason;      //!< why there is no candidate: not triton on a GPU, or what the rewriter refused
  std::string provenance;  //!< JSON object: torch and triton versions, the Inductor config, each kernel's config
  double harvest_ms = 0;   //!< compile + autotune + rewrite, in the reference runner
  bool ok() const { return !source.empty(); }
};

//! Checks many candidates for one op, reusing reference outputs, baseline timing,
//! a pre-started sandbox process and a result cache. Not thread-safe.
class Checker {
 public:
  //! Compiles the reference and computes every trial's outputs. nullptr and `error` if the op itself fails.
  static std::unique_ptr<Checker> create(const spec::OpSpec& spec, const CheckOptions& options, std::string& error);
  ~Checker();

  //! Checks one program text. Never throws; a crashing or hanging candidate is an outcome.
  CheckResult check(const std::string& program_text);

  //! On a GPU with the triton target: starts the candidate that will be checked next in a
  //! child of its own, which imports it and compiles its kernels for every trial's shapes
  //! without launching any (the runner's "prepare"), while the caller checks the current
  //! one; check() of the same text then finds its JIT done. False (and nothing started)
  //! elsewhere, or when the program's result is cached. At most options.prefetch_ahead + 1
  //! are kept (those ahead and the one about to be checked); one more replaces the oldest.
  bool prefetch(const std::string& program_text);

  //! On a GPU with the triton target: compiles the op with torch.compile (default mode,
  //! dynamic shapes) in the reference runner and rewrites Inductor's kernels into a triton
  //! candidate, which the caller checks like any other. Elsewhere: the reason there is none.
  InductorHarvest harvest_inductor();

  //! True if the reference output is near-constant (a constant kernel might pass).
  bool weak_test() const;
  //! True when candidates run and are timed on a GPU (CUDA events; other processes' CPU use
  //! does not enter the measurement, so no CPU quiet window is needed before a check).
  bool times_on_gpu() const;
  //! Output shapes on the main shapes, in order.
  std::vector<std::vector<int64_t>> output_shapes() const;
  //! Where create()'s time went.
  const SetupPhases& setup_phases() const;
  //! Starts `options.child_pool`'s children for checks with these options (the candidate's
  //! child; on a GPU the reference runners too), so that even the first Checker finds them.
  static void warm_pool(const CheckOptions& options);

 private:
  Checker();
  // check()'s body (cache, store, run_check); check() wraps it so nothing escapes.
  void check_into(const std::string& program_text, std::chrono::steady_clock::time_point started, CheckResult& result);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

//! One-shot check (builds a Checker; use Checker for many candidates of one op).
CheckResult check_candidate(const spec::OpSpec& spec, const std::string& program_text, const CheckOptions& options = {});

}  // namespace kforge::harness
