// kforge-sandbox: the child that compiles and runs one candidate kernel program on a
// KernelBackend (OpenCL on PoCL or a GPU, or CUDA). Started (pre-started) by the Checker
// through kforge-jail with the op's arena (inputs on fd 3, read-only; output slots on
// fd 5); one JSON line per command on stdin, one reply line on the reply pipe
// ($KFORGE_REPLY_FD, fd 4; stdout and stderr are only captured, never parsed):
//   ready -> {"cmd":"build"} -> {"cmd":"run"}... -> {"cmd":"time"} -> exit.
// Started before its op (a ChildPool's, $KFORGE_ATTACH_FD): ready -> {"cmd":"attach"} (the
// arena's fds arrive on the attach socket) -> build... Once its device is up (and its arena
// attached) it narrows its seccomp filter (on PoCL: files, memory, threads and the linker),
// before any candidate code is compiled or run.
// A crash, hang or runaway allocation here is an outcome for the parent, never its death.
// Usage (by the harness only): kforge-sandbox [--target opencl|cuda] [--device NAME] [--no-warm-up]
// (--no-warm-up: no trivial kernel built before "ready"; CheckOptions::warm_up)
//        kforge-sandbox --list-devices   (the OpenCL and CUDA devices, as JSON)
// Test: ctest -R 'harness_(checker|adversarial|kernel_backend|sandbox)'.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <deque>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "worker/harness/host_devices.h"
#include "worker/harness/kernel_backend.h"
#include "worker/harness/sandbox_policy.h"
#include "worker/harness/seccomp_filter.h"
#include "worker/harness/timing.h"

using namespace kforge::harness;
using nlohmann::json;

namespace {

FILE* g_reply = nullptr;  // the reply pipe (or, run by hand, a private copy of stdout)

bool fd_open(int fd) { return fcntl(fd, F_GETFD) != -1; }

struct Arena {
  const uint8_t* inputs = nullptr;  // read-only view of the input region
  uint8_t* outputs = nullptr;       // writable view of the output region
  int64_t input_bytes = 0, output_bytes = 0;

  // The jail's two fds (inputs on fd 3, outputs on $KFORGE_ARENA_OUTPUT_FD), each mapped
  // whole at start-up (their sizes are the regions'), so a pre-started sandbox has the
  // arena ready before its candidate arrives. False when run by hand (one fd: mapped on
  // the first command, which says where the outputs start).
  bool map_given() {
    const int output_fd = given_output_fd();
    struct stat in {}, out {};
    if (output_fd < 0 || fstat(kArenaInputFd, &in) != 0 || fstat(output_fd, &out) != 0) return false;
    map_regions(in.st_size, in.st_size + out.st_size, output_fd);
    return true;
  }

  // Maps [0, input_region) read-only from fd 3 and the output slots writable from
  // $KFORGE_ARENA_OUTPUT_FD (fd 5; run by hand, from fd 3 past the inputs), once.
  void map(int64_t input_region, int64_t total) {
    if ((inputs || input_region == 0) && input_region == input_bytes && total - input_region <= output_bytes) return;
    if (input_region % sysconf(_SC_PAGESIZE) != 0) throw std::runtime_error("arena input region not page aligned");
    map_regions(input_region, total, given_output_fd());
  }

  uint8_t* output_at(int64_t offset) const { return outputs + (offset - input_bytes); }

 private:
  static int given_output_fd() {
    const char* name = std::getenv("KFORGE_ARENA_OUTPUT_FD");
    const int fd = name ? std::atoi(name) : -1;
    return fd >= 0 && fd_open(fd) ? fd : -1;
  }

  void map_regions(int64_t input_region, int64_t total, int output_fd) {
    const bool split = output_fd >= 0;
    struct stat st {};
    if (fstat(kArenaInputFd, &st) != 0 || st.st_size < (split ? input_region : total))
      throw std::runtime_error("arena fd 3 missing or too small");
    if (input_region > 0) {
      void* in = mmap(nullptr, static_cast<size_t>(input_region), PROT_READ, MAP_SHARED, kArenaInputFd, 0);
      if (in == MAP_FAILED) throw std::runtime_error(std::string("mmap arena inputs: ") + std::strerror(errno));
      inputs = static_cast<const uint8_t*>(in);
    }
    if (total > input_region) {
      void* out = mmap(nullptr, static_cast<size_t>(total - input_region), PROT_READ | PROT_WRITE, MAP_SHARED,
                       split ? output_fd : kArenaInputFd, split ? 0 : input_region);
      if (out == MAP_FAILED) throw std::runtime_error(std::string("mmap arena outputs: ") + std::strerror(errno));
      outputs = static_cast<uint8_t*>(out);
    }
    input_bytes = input_region;
    output_bytes = total - input_region;
  }
};

// The descriptors one SCM_RIGHTS message on `socket_fd` carries (the attach; at most 4).
std::vector<int> receive_fds(int socket_fd) {
  char byte = 0;
  iovec io{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)] = {};
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  ssize_t got = -1;
  do {
    got = ::recvmsg(socket_fd, &message, MSG_CMSG_CLOEXEC);
  } while (got < 0 && errno == EINTR);
  if (got <= 0) throw std::runtime_error(std::string("attach: recvmsg: ") + (got == 0 ? "closed" : std::strerror(errno)));
  std::vector<int> fds;
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    const auto* data = reinterpret_cast<const int*>(CMSG_DATA(header));
    fds.insert(fds.end(), data, data + count);
  }
  return fds;
}

void reply(const json& message) {
  std::string line = message.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  std::fwrite(line.data(), 1, line.size(), g_reply);
  std::fflush(g_reply);
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// One set of device buffers for a plan (inputs, outputs, scratch) with the plan bound to it.
struct BufferSet {
  std::vector<std::unique_ptr<DeviceBuffer>> buffers;
  std::unique_ptr<BoundPlan> bound;
  int trial = -1;  // whose inputs it holds now
  std::vector<std::optional<uint64_t>> prints;  // per buffer: the input's fingerprint when loaded
};

// A failed check inside the child, reported as {"ok": false, "kind": ..., ...}.
struct ChildFailure {
  json reply;
};

// Holds the GPU gate (kGpuGateEnv names its fd, sandbox_policy.h) from construction; closes it
// on destruction, which lets it go.
class GpuGate {
 public:
  GpuGate() {
    const char* name = std::getenv(kGpuGateEnv);
    if (!name || !*name) return;
    fd_ = std::atoi(name);
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~GpuGate() {
    if (fd_ >= 0) ::close(fd_);
  }
  GpuGate(const GpuGate&) = delete;
  GpuGate& operator=(const GpuGate&) = delete;

 private:
  int fd_ = -1;
};

class Sandbox {
 public:
  Sandbox(const std::string& target, const std::string& device, bool warm)
      : target_(target.empty() ? "opencl" : target), backend_(make_kernel_backend(target_, device)) {
    if (warm) warm_up();
    if (arena_.map_given()) pin_arena();
    // The fingerprint key: from the kernel's entropy, never in device memory or any reply.
    std::random_device entropy;
    print_key_ = (uint64_t{entropy()} << 32) ^ entropy();
    print_salt_ = (uint64_t{entropy()} << 32) ^ entropy();
  }

  // Builds and runs a trivial kernel once, so the compiler and the launch machinery
  // are loaded before "ready": a pre-started sandbox then pays none of it per candidate.
  void warm_up() {
    const bool cuda = target_ == "cuda";
    const std::string source =
        cuda ? "extern \"C\" __global__ void kforge_warm_up(float* p) { p[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f; }"
             : "__kernel void kforge_warm_up(__global float* p) { p[get_global_id(0)] = 1.0f; }";
    if (!backend_->build(source, cuda ? "" : "-cl-std=CL1.2", {"kforge_warm_up"}).ok) return;
    LaunchPlan plan;
    plan.buffers = {{"p", PlanBuffer::Role::scratch, 0, 64 * 4}};
    PlanLaunch launch;
    launch.kernel = "kforge_warm_up";
    launch.global[0] = 64;
    launch.local[0] = 64;
    launch.args = {{PlanArg::Kind::buffer, 0, 0, 0}};
    plan.launches = {launch};
    auto buffer = backend_->allocate(64 * 4);
    auto bound = backend_->bind(plan, {buffer.get()});
    backend_->launch(*bound);
  }

  // On a GPU the inputs region is page-locked (read-only to the device) up front, so the
  // per-trial copies in run at bus speed; the cost (tens of ms) falls in start-up (or the
  // attach), which a pre-started sandbox pays before its candidate arrives.
  void pin_arena() {
    if (backend_->is_cpu()) return;
    if (arena_.input_bytes > 0)
      pinned_inputs_ = backend_->register_host(const_cast<uint8_t*>(arena_.inputs),
                                               static_cast<size_t>(arena_.input_bytes), true);
    if (arena_.output_bytes > 0) backend_->register_host(arena_.outputs, static_cast<size_t>(arena_.output_bytes), false);
  }

  // A pre-started sandbox (ChildPool) gets its op's arena now: the fds arrive on the attach
  // socket (inputs, outputs, and the GPU gate to hold while page-locking), become fds 3 and 5
  // as if the jail had given them, and are mapped and pinned as at start-up.
  json attach() {
    auto started = std::chrono::steady_clock::now();
    std::vector<int> fds = receive_fds(kAttachFd);
    ::close(kAttachFd);
    if (fds.size() < 2) throw std::runtime_error("attach: the arena's descriptors did not arrive");
    if (::dup2(fds[0], kArenaInputFd) < 0 || ::dup2(fds[1], kArenaOutputFd) < 0)
      throw std::runtime_error(std::string("attach: dup2: ") + std::strerror(errno));
    for (size_t fd_idx = 0; fd_idx < 2; ++fd_idx) ::close(fds[fd_idx]);
    const int gate = fds.size() > 2 ? fds[2] : -1;
    if (gate >= 0)
      while (::flock(gate, LOCK_EX) != 0 && errno == EINTR) {
      }
    if (!arena_.map_given()) {
      if (gate >= 0) ::close(gate);
      throw std::runtime_error("attach: the arena could not be mapped");
    }
    pin_arena();
    if (gate >= 0) ::close(gate);  // closing releases the gate for good
    return {{"ok", true}, {"attached", true}, {"pinned_inputs", pinned_inputs_}, {"attach_ms", ms_since(started)}};
  }

  json ready() const {
    json device = backend_->describe();
    device["pinned_inputs"] = pinned_inputs_;
    return {{"ready", true}, {"device", device}};
  }
  bool is_cpu() const { return backend_->is_cpu(); }

  json build(const json& cmd) {
    auto start = std::chrono::steady_clock::now();
    auto outcome = backend_->build(cmd.at("source").get<std::string>(), cmd.value("options", ""),
                                   cmd.value("kernels", std::vector<std::string>{}));
    built_ = outcome.ok;
    if (!outcome.ok) return {{"ok", false}, {"kind", "compile_error"}, {"log", outcome.log}, {"build_ms", ms_since(start)}};
    return {{"ok", true}, {"build_ms", ms_since(start)}, {"log", outcome.log}};
  }

  json run(const json& cmd) {
    LaunchPlan plan = read_plan(cmd);
    arena_.map(cmd.at("input_region").get<int64_t>(), cmd.at("arena_bytes").get<int64_t>());
    auto offsets_in = cmd.at("inputs").get<std::vector<int64_t>>();
    auto offsets_out = cmd.at("outputs").get<std::vector<int64_t>>();
    uint8_t poison = static_cast<uint8_t>(cmd.value("poison", 255));
    auto io_started = std::chrono::steady_clock::now();
    BufferSet set = allocate_set(plan);
    load_set(plan, set, offsets_in, poison);
    double io_ms = ms_since(io_started);
    TimingSample sample = backend_->launch(*set.bound);
    try {
      io_started = std::chrono::steady_clock::now();
      read_back(plan, set, offsets_in, offsets_out, "");
      io_ms += ms_since(io_started);
    } catch (const ChildFailure& failure) {
      return failure.reply;
    }
    recycle(set);
    return {{"ok", true}, {"run_ms", sample.wall_ms}, {"kernel_ms", sample.device_ms}, {"io_ms", io_ms}};
  }

  // The timing protocol of timing.h, as suspicious as verification: `sets` are verified
  // trial input sets; `rotations` buffer sets are cycled (together larger than the
  // last-level cache on CPUs), and after every run (on a GPU: every batch of runs, one per
  // set) the sets just used are reloaded with the next trials' inputs, their outputs and
  // scratch poisoned again. So the same addresses hold new data on each visit (a result
  // cached by address or a flag left in scratch goes stale), and nothing is written just
  // before the run that uses it (cold caches; GPUs also flush L2 before each run). A final lap, run exactly like the timed runs, sends every
  // set's outputs back for the parent to check, with inputs and guard regions verified.
  json time(const json& cmd) {
    LaunchPlan plan = read_plan(cmd);
    arena_.map(cmd.at("input_region").get<int64_t>(), cmd.at("arena_bytes").get<int64_t>());
    std::vector<std::vector<int64_t>> set_inputs, set_outputs;
    if (cmd.contains("sets")) {
      for (const auto& set : cmd.at("sets")) {
        set_inputs.push_back(set.at("inputs").get<std::vector<int64_t>>());
        set_outputs.push_back(set.value("outputs", std::vector<int64_t>{}));
      }
    } else {
      set_inputs.push_back(cmd.at("inputs").get<std::vector<int64_t>>());
      set_outputs.emplace_back();
    }
    const int trials = static_cast<int>(set_inputs.size());
    int rotations = std::max(1, cmd.value("rotations", 1));
    const bool gpu = !backend_->is_cpu();
    // On a GPU a batch of runs, one per buffer set, is queued back to back and synchronised
    // once (triton's do_bench); "dense": false runs and waits for one at a time.
    const bool dense = gpu && cmd.value("dense", true);
    if (dense) {
      int64_t set_bytes = 1;
      for (const auto& buffer : plan.buffers) set_bytes += buffer.bytes;
      // As many sets as the batch, within 2 GB of device memory (at least one).
      const int64_t fits = std::max<int64_t>(1, (int64_t{2} << 30) / set_bytes);
      rotations = static_cast<int>(std::min<int64_t>(std::max(rotations, cmd.value("batch", 8)), fits));
    }
    // With a multiple of the trial count every buffer set would always hold the same trial.
    if (trials > 1 && rotations % trials == 0) ++rotations;
    uint8_t poison = static_cast<uint8_t>(cmd.value("poison", 255));
    TimingProtocol protocol;
    protocol.max_seconds = cmd.value("max_seconds", protocol.max_seconds);
    protocol.target_iqr = cmd.value("target_iqr", protocol.target_iqr);
    protocol.attempts = cmd.value("attempts", protocol.attempts);
    protocol.max_contention = cmd.value("max_contention", protocol.max_contention);
    protocol.settle_tolerance = cmd.value("settle_tolerance", protocol.settle_tolerance);
    protocol.min_runs = cmd.value("min_runs", protocol.min_runs);
    protocol.min_window_seconds = cmd.value("min_window_seconds", protocol.min_window_seconds);
    protocol.touch_runs = std::max(2, rotations);
    // GPUs idle at low clocks and ramp up under load: warm up at least 100 ms there (do_bench: 25 ms).
    protocol.min_warmup_seconds = cmd.value("min_warmup_seconds", gpu ? 0.1 : 0.0);

    std::vector<BufferSet> sets(static_cast<size_t>(rotations));
    int next_trial = 0;
    for (auto& set : sets) {
      set = allocate_set(plan);
      set.trial = next_trial++ % trials;
      load_set(plan, set, set_inputs[static_cast<size_t>(set.trial)], poison);
    }
    std::vector<bool> verified(static_cast<size_t>(trials), false);
    bool final_lap = false;
    std::deque<TimingSample> done;  // times of runs made but not yet handed to the protocol
    // Runs the next set (dense: every set), then checks (final lap) and reloads what ran.
    auto run_batch = [&](int run_idx) {
      const size_t first = dense ? 0 : static_cast<size_t>(run_idx % rotations);
      const size_t count = dense ? sets.size() : 1;
      std::vector<BoundPlan*> plans;
      for (size_t idx = first; idx < first + count; ++idx) plans.push_back(sets[idx].bound.get());
      std::vector<TimingSample> samples = backend_->launch_batch(plans);
      for (size_t idx = first; idx < first + count; ++idx) {
        BufferSet& set = sets[idx];
        if (final_lap) {
          auto trial = static_cast<size_t>(set.trial);
          read_back(plan, set, set_inputs[trial], set_outputs[trial], "while timed");
          verified[trial] = true;
        }
        set.trial = next_trial++ % trials;
        load_set(plan, set, set_inputs[static_cast<size_t>(set.trial)], poison);
        // On a GPU the measured time is the device's (events around the launches); on a CPU
        // device the wall time around launch and finish.
        TimingSample sample = samples[idx - first];
        if (gpu) sample.wall_ms = sample.device_ms;
        done.push_back(sample);
      }
    };
    auto run = [&](int run_idx) {
      if (done.empty()) run_batch(run_idx);
      TimingSample sample = done.front();
      done.pop_front();
      return sample;
    };
    TimingRecord record = run_timing_protocol(run, protocol, std::max(3, rotations));
    final_lap = true;
    int lap_runs = 0;
    try {
      for (int run_idx = 0; !std::all_of(verified.begin(), verified.end(), [](bool v) { return v; }); ++run_idx) {
        run_batch(run_idx);
        if (++lap_runs > rotations * trials + rotations) throw std::runtime_error("final lap did not cover every set");
      }
    } catch (const ChildFailure& failure) {
      return failure.reply;
    }
    for (auto& set : sets) recycle(set);
    return {{"ok", true},
            {"median_ms", record.median_ms},
            {"min_ms", record.min_ms},
            {"iqr_ms", record.iqr_ms},
            {"runs", record.runs},
            {"kernel_median_ms", record.device_median_ms},
            {"rotations", rotations},
            {"verified_sets", trials},
            {"clock", gpu ? "device_events" : "wall"},
            {"warmup_runs", record.warmup_runs},
            {"settled", record.settled},
            {"attempts", record.attempts},
            {"attempt_medians_ms", record.attempt_medians_ms},
            {"others_cores", record.others_cores},
            {"disturbed", record.disturbed}};
  }

 private:
  std::string target_;
  std::unique_ptr<KernelBackend> backend_;
  bool built_ = false;
  Arena arena_;
  bool pinned_inputs_ = false;
  uint64_t print_key_ = 0, print_salt_ = 0;  // keys of the inputs' fingerprints
  // Device buffers kept between runs, by size: a check's trials use a few sizes over and
  // over, and allocating and freeing ~100 MB per trial costs more than its copies. Every
  // run writes its inputs and poisons outputs and scratch again, so nothing carries over.
  // Declared after backend_: freed before it.
  std::multimap<int64_t, std::unique_ptr<DeviceBuffer>> pool_;

  LaunchPlan read_plan(const json& cmd) {
    if (!built_) throw std::runtime_error("run before a successful build");
    LaunchPlan plan;
    std::string error;
    if (!launch_plan_from_json(cmd.at("plan").dump(), plan, error)) throw std::runtime_error(error);
    return plan;
  }

  BufferSet allocate_set(const LaunchPlan& plan) {
    BufferSet set;
    std::vector<DeviceBuffer*> raw;
    for (const auto& buffer : plan.buffers) {
      auto kept = pool_.find(buffer.bytes);
      if (kept == pool_.end()) {
        set.buffers.push_back(backend_->allocate(buffer.bytes));
      } else {
        set.buffers.push_back(std::move(kept->second));
        pool_.erase(kept);
      }
      raw.push_back(set.buffers.back().get());
    }
    set.bound = backend_->bind(plan, raw);
    return set;
  }

  // Returns a set's buffers to the pool (after a run that passed its checks).
  void recycle(BufferSet& set) {
    set.bound.reset();
    for (auto& buffer : set.buffers) {
      const int64_t bytes = buffer->bytes();
      pool_.emplace(bytes, std::move(buffer));
    }
    set.buffers.clear();
  }

  // Inputs copied in from the arena; outputs and scratch poisoned (0xFF: NaN; 0x7F: 3.4e38),
  // so an unwritten output or a read of scratch nothing wrote shows in the result.
  // Where the device can fingerprint a buffer (CUDA), each input's print is taken as it is
  // loaded, and read_back compares prints instead of copying the input back.
  void load_set(const LaunchPlan& plan, BufferSet& set, const std::vector<int64_t>& offsets_in, uint8_t poison) {
    set.prints.assign(plan.buffers.size(), std::nullopt);
    for (size_t buffer_idx = 0; buffer_idx < plan.buffers.size(); ++buffer_idx) {
      const auto& buffer = plan.buffers[buffer_idx];
      if (buffer.role == PlanBuffer::Role::input) {
        set.buffers[buffer_idx]->write(arena_.inputs + offsets_in.at(static_cast<size_t>(buffer.index)));
        set.prints[buffer_idx] = set.buffers[buffer_idx]->fingerprint(print_key_, print_salt_);
      } else {
        set.buffers[buffer_idx]->fill(poison);
      }
    }
  }

  // Guards intact, outputs to the arena, inputs unchanged; a violation throws ChildFailure.
  void read_back(const LaunchPlan& plan, BufferSet& set, const std::vector<int64_t>& offsets_in,
                 const std::vector<int64_t>& offsets_out, const std::string& when) {
    const std::string suffix = when.empty() ? "" : " " + when;
    for (size_t buffer_idx = 0; buffer_idx < plan.buffers.size(); ++buffer_idx)
      if (!set.buffers[buffer_idx]->guards_intact())
        throw ChildFailure{{{"ok", false},
                            {"kind", "runtime_error"},
                            {"message", "out-of-bounds write" + suffix + ": memory just outside buffer '" +
                                            plan.buffers[buffer_idx].name + "' was modified"}}};
    for (size_t buffer_idx = 0; buffer_idx < plan.buffers.size(); ++buffer_idx) {
      const auto& buffer = plan.buffers[buffer_idx];
      auto index = static_cast<size_t>(buffer.index);
      if (buffer.role == PlanBuffer::Role::output && index < offsets_out.size()) {
        set.buffers[buffer_idx]->read(arena_.output_at(offsets_out[index]));
      } else if (buffer.role == PlanBuffer::Role::input) {
        const auto& loaded = set.prints[buffer_idx];
        if (loaded && set.buffers[buffer_idx]->fingerprint(print_key_, print_salt_) == loaded) continue;
        // No print, or a different one: the byte-by-byte comparison finds the first change.
        int64_t first = 0;
        if (!set.buffers[buffer_idx]->matches(arena_.inputs + offsets_in.at(index), first))
          throw ChildFailure{{{"ok", false}, {"kind", "input_mutated"}, {"buffer", buffer.name}, {"byte", first},
                              {"when", when}}};
      }
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  // Die with the parent: a sandbox must never outlive the worker that started it.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // Replies travel on the reply pipe the harness gave us. Run by hand (no pipe), on a
  // private copy of stdout, fd 1 then leading to stderr: either way nothing a kernel or
  // a compiler prints to stdout can pass for a reply.
  const char* reply_fd_name = std::getenv("KFORGE_REPLY_FD");
  int reply_fd = reply_fd_name ? std::atoi(reply_fd_name) : -1;
  if (reply_fd < 0 || !fd_open(reply_fd)) {
    reply_fd = dup(STDOUT_FILENO);
    if (reply_fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) return 2;
  }
  g_reply = fdopen(reply_fd, "w");
  if (!g_reply) return 2;
  // Pin PoCL's worker threads, one per core (unless the caller chose otherwise).
  // Unpinned, on a busy machine the threads share cores with other work and the
  // timings jump by scheduler ticks; see docs/harness.md "Why the timer drifted".
  setenv("POCL_AFFINITY", "1", 0);
  for (int arg_idx = 1; arg_idx < argc; ++arg_idx)
    if (std::string(argv[arg_idx]) == "--list-devices") {
      // Discovery for the worker, which must not initialise OpenCL or CUDA itself.
      reply(list_devices_json());
      return 0;
    }
  std::string device, target = "opencl";
  bool warm = true;
  for (int arg_idx = 1; arg_idx < argc; ++arg_idx) {
    if (std::string(argv[arg_idx]) == "--no-warm-up") warm = false;
    if (arg_idx + 1 == argc) break;
    if (std::string(argv[arg_idx]) == "--device") device = argv[arg_idx + 1];
    if (std::string(argv[arg_idx]) == "--target") target = argv[arg_idx + 1];
  }
  std::unique_ptr<Sandbox> sandbox;
  {
    // The device is initialised (context, warm-up kernel) while holding the GPU gate, so
    // a pre-started sandbox never touches the GPU while the parent times another; the
    // gate is closed before any command arrives, so no candidate can hold it.
    GpuGate gate;
    try {
      sandbox = std::make_unique<Sandbox>(target, device, warm);
    } catch (const std::exception& e) {
      reply({{"ready", false}, {"message", e.what()}});
      return 1;
    }
  }
  // Pre-started before its op (a ChildPool's, $KFORGE_ATTACH_FD): ready now, then the first
  // command must be the attach, which brings the arena; the seccomp filter narrows after it,
  // still before any candidate code.
  const char* attach_name = std::getenv(kAttachEnv);
  const bool attach_later = attach_name && *attach_name;
  std::string line;
  if (attach_later) {
    reply(sandbox->ready());
    json cmd = json::parse(std::getline(std::cin, line) ? line : std::string("{}"), nullptr, false);
    if (!cmd.is_object() || cmd.value("cmd", "") != "attach") return 0;  // quit, EOF or nonsense: nothing to do
    json attached;
    try {
      attached = sandbox->attach();
    } catch (const std::exception& e) {
      reply({{"ok", false}, {"kind", "internal_error"}, {"message", e.what()}});
      return 1;
    }
    if (sandbox->is_cpu()) {
      std::string why = tighten_seccomp_from_env(SeccompProfile::pocl);
      if (!why.empty()) {
        reply({{"ok", false}, {"kind", "internal_error"}, {"message", "seccomp: " + why}});
        return 1;
      }
    }
    reply(attached);
  } else {
    // Start-up is done: on the CPU the kernel will run in this process, so narrow the
    // seccomp filter to what PoCL needs before any candidate code is compiled.
    if (sandbox->is_cpu()) {
      std::string why = tighten_seccomp_from_env(SeccompProfile::pocl);
      if (!why.empty()) {
        reply({{"ready", false}, {"message", "seccomp: " + why}});
        return 1;
      }
    }
    reply(sandbox->ready());
  }
  while (std::getline(std::cin, line)) {
    json cmd;
    try {
      cmd = json::parse(line);
    } catch (const std::exception& e) {
      reply({{"ok", false}, {"kind", "internal_error"}, {"message", std::string("bad command: ") + e.what()}});
      continue;
    }
    std::string name = cmd.value("cmd", "");
    if (name == "quit") break;
    try {
      if (name == "build") reply(sandbox->build(cmd));
      else if (name == "run") reply(sandbox->run(cmd));
      else if (name == "time") reply(sandbox->time(cmd));
      else reply({{"ok", false}, {"kind", "internal_error"}, {"message", "unknown command '" + name + "'"}});
    } catch (const std::bad_alloc&) {
      reply({{"ok", false}, {"kind", "runtime_error"}, {"message", "out of memory in the sandbox"}});
    } catch (const std::exception& e) {
      reply({{"ok", false}, {"kind", "runtime_error"}, {"message", e.what()}});
    }
  }
  return 0;
}
