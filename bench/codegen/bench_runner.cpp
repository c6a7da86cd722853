// The codegen benchmark (see bench_runner.h): per op, codegen::autotune through the
// harness Checker (sandbox, seeded + secret + extra-shape trials, NaN poison,
// determinism, rotated timing vs libtorch eager with matched threads), keep the fastest.
#include "bench/codegen/bench_runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "worker/codegen/autotune.h"
#include "worker/codegen/codegen.h"
#include "worker/harness/devices.h"
#include "worker/harness/reference.h"

namespace kforge::bench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string load_average() {
  std::string text = read_text("/proc/loadavg");
  return text.substr(0, text.find('\n'));
}

double round3(double v) { return std::round(v * 1000.0) / 1000.0; }

// Bytes moved at least once (every input + the output) and matmul FLOPs,
// for GB/s and GFLOP/s. Both are lower bounds on the traffic and work of any kernel.
double min_bytes(const spec::OpSpec& spec, const codegen::Analysis& analysis) {
  const auto& out = analysis.graph.nodes[analysis.graph.output];
  double bytes = (out.int_type == "long" ? 8.0 : 4.0) * codegen::numel_value(out.shape);
  for (const auto& in : spec.inputs) bytes += spec::shape_numel(in.shape) * spec::dtype_size(in.dtype);
  return bytes;
}

double matmul_flops(const codegen::Analysis& analysis) {
  double flops = 0;
  for (const auto& node : analysis.graph.nodes) {
    if (node.kind != codegen::NodeKind::matmul) continue;
    const auto& a = analysis.graph.nodes[node.args[0]].shape;
    flops += 2.0 * codegen::numel_value(node.shape) * a.back().value;
  }
  return flops;
}

// Unary/binary operators that eager evaluates with vectorised (SLEEF / AVX2) code and
// PoCL's kernel compiler may not; named in the eager-wins reason when present.
std::vector<std::string> transcendentals(const codegen::Analysis& analysis) {
  static const std::set<std::string> names = {"exp", "log", "log1p", "expm1", "pow", "pow_scalar", "sin", "cos", "tanh", "erf",
                                              "sigmoid", "softplus", "gelu", "atan", "asin", "acos", "log2", "log10"};
  std::set<std::string> found;
  for (const auto& node : analysis.graph.nodes)
    if ((node.kind == codegen::NodeKind::unary || node.kind == codegen::NodeKind::binary) && names.count(node.op))
      found.insert(node.op);
  return {found.begin(), found.end()};
}

// Why eager is faster for this op, from its structure and the measured rates.
std::string eager_wins_reason(const codegen::Analysis& analysis, const json& row) {
  const double kernel_iqr = row["kernel"].value("iqr_ms", 0.0), eager_iqr = row["eager"].value("iqr_ms", 0.0);
  const double gap = row["eager_ms"].get<double>() - row["kernel_ms"].get<double>();
  std::ostringstream why;
  if (std::fabs(gap) <= std::max(kernel_iqr, eager_iqr)) why << "within timing noise (gap smaller than the IQR); ";
  std::string stages = analysis.describe();
  if (row.contains("gflops")) {
    why << "matmul: eager's BLAS (sgemm / sgemv) reaches " << round3(row["eager_gflops"].get<double>())
        << " GFLOP/s vs the teacher's " << round3(row["gflops"].get<double>())
        << " GFLOP/s (register-blocked OpenCL, no packing or cache blocking)";
    return why.str();
  }
  if (stages.find("reduce_full") != std::string::npos)
    why << "full reduction: two launches (partials + combine), the first without floatN loads; ";
  auto slow = transcendentals(analysis);
  if (!slow.empty()) {
    why << "transcendental ";
    for (size_t name_idx = 0; name_idx < slow.size(); ++name_idx) why << (name_idx ? "/" : "") << slow[name_idx];
    why << ": eager uses vectorised SLEEF (AVX2) kernels, PoCL's OpenCL builtins are slower per element; ";
  }
  why << "eager moves " << round3(row["eager_gbps"].get<double>()) << " GB/s vs the kernel's "
      << round3(row["gbps"].get<double>()) << " GB/s (" << stages << ")";
  return why.str();
}

json timing_json(const std::optional<harness::TimingStats>& stats) {
  if (!stats) return nullptr;
  return {{"median_ms", stats->median_ms}, {"min_ms", stats->min_ms},   {"iqr_ms", stats->iqr_ms},
          {"runs", stats->runs},           {"rotations", stats->rotations}, {"kernel_median_ms", stats->kernel_median_ms}};
}

struct Options {
  std::string suite = "suite";
  std::string filter;
  std::string out = "bench/results/codegen.json";
  bool merge = false;  // re-measure the selected ops into an existing results file
  bool resume = false;  // keep the rows of an earlier, cut-off run in --out and measure only the ops it lacks
  size_t max_schedules = 4;
  bool spread = true;  // false (--first-schedules): the space's first max_schedules, in its order
  size_t shard = 0, shards = 1;  // --shard I/N: this run takes the ops whose index % N == I
  harness::CheckOptions check;
};

json bench_op(const spec::OpSpec& spec, const json& meta, const Options& opt, json& environment) {
  json row = {{"name", spec.name},
              {"op", spec.name},
              {"target", opt.check.target},
              {"level", meta.value("level", 0)},
              {"category", meta.value("category", "")},
              {"split", meta.value("split", "")}};
  auto analysis = codegen::analyze(spec);
  if (!analysis.ok()) {
    row["outcome"] = "unsupported";
    row["reason"] = analysis.unsupported;
    return row;
  }
  row["stages"] = analysis.describe();
  codegen::Target target = codegen::Target::opencl;
  codegen::parse_target(opt.check.target, target);  // validated when the flags were read
  row["target"] = opt.check.target;
  row["schedule_space"] = codegen::schedule_space(analysis, target).size();
  auto tuned = codegen::autotune(spec, opt.check, opt.max_schedules, opt.spread);
  if (tuned.status == codegen::AutotuneStatus::reference_error || tuned.status == codegen::AutotuneStatus::unsupported) {
    row["outcome"] = tuned.status == codegen::AutotuneStatus::unsupported ? "unsupported" : "reference_error";
    row["reason"] = tuned.unsupported;
    return row;
  }
  json variants = json::array();
  const harness::CheckResult* best = nullptr;
  int correct = 0, suspicious = 0;
  for (const auto& variant : tuned.variants) {
    json v = {{"schedule", variant.schedule.label()}, {"outcome", variant.outcome},
              {"check_ms", round3(variant.check.total_ms)}, {"timing_ms", round3(variant.check.time_ms)}};
    if (variant.outcome == "correct") {
      ++correct;
      v["kernel_ms"] = variant.kernel_ms;
      v["speedup"] = variant.speedup;
      if (variant.check.speedup_vs_compile > 0) v["speedup_vs_compile"] = variant.check.speedup_vs_compile;
      v["kernel_iqr_ms"] = variant.check.kernel ? variant.check.kernel->iqr_ms : 0.0;
      if (variant.check.suspicious) {
        v["suspicious"] = true;
        ++suspicious;
      }
      if (variant.schedule.label() == tuned.schedule.label()) best = &variant.check;
    } else {
      v["message"] = variant.message.substr(0, 300);
    }
    if (environment.empty() && !variant.check.environment.device.empty()) {
      const auto& env = variant.check.environment;
      environment = {{"device", env.device},           {"platform", env.platform},
                     {"driver_version", env.driver_version}, {"compute_units", env.compute_units},
                     {"torch_version", env.torch_version}, {"torch_threads", env.torch_threads},
                     {"blas", env.blas},          {"target", env.target},
                     {"gpu", env.gpu},            {"gpu_clocks", env.gpu_clocks}};
    }
    variants.push_back(v);
  }
  row["schedules_tried"] = tuned.variants.size();
  row["schedules_correct"] = correct;
  row["variants"] = variants;
  if (tuned.status != codegen::AutotuneStatus::correct || !best || !best->kernel || !best->baseline) {
    std::string reason = tuned.unsupported;
    row["outcome"] = reason.rfind("no correct variant; first: ", 0) == 0
                         ? reason.substr(27, reason.find(':', 27) - 27)
                         : "no_correct";
    row["reason"] = reason.substr(0, 400);
    return row;
  }
  const double bytes = min_bytes(spec, analysis), flops = matmul_flops(analysis);
  row["outcome"] = "correct";
  row["best_schedule"] = tuned.schedule.label();
  row["kernel_ms"] = best->kernel->median_ms;
  row["eager_ms"] = best->baseline->median_ms;
  row["speedup"] = best->speedup;
  row["speedup_vs_eager"] = best->speedup;
  if (best->baseline_compile) {
    // GPU runs: torch.compile (default mode) timed the same way by the Checker.
    row["compile_ms"] = best->baseline_compile->median_ms;
    row["speedup_vs_compile"] = best->speedup_vs_compile;
    row["compile"] = timing_json(best->baseline_compile);
  }
  row["suspicious"] = best->suspicious;
  row["weak_test"] = best->weak_test;
  row["trials_passed"] = best->trials_passed;
  row["kernel"] = timing_json(best->kernel);
  row["eager"] = timing_json(best->baseline);
  row["load_average"] = best->environment.load_average;
  row["gbps"] = bytes / (best->kernel->median_ms * 1e6);
  row["eager_gbps"] = bytes / (best->baseline->median_ms * 1e6);
  if (flops > 0) {
    row["gflops"] = flops / (best->kernel->median_ms * 1e6);
    row["eager_gflops"] = flops / (best->baseline->median_ms * 1e6);
  }
  if (suspicious) row["suspicious_variants"] = suspicious;
  // The reasons name CPU-side causes (PoCL builtins, OpenBLAS): OpenCL runs only.
  if (best->speedup < 1.0 && target == codegen::Target::opencl)
    row["eager_wins_because"] = eager_wins_reason(analysis, row);
  return row;
}

// Eager matmul GFLOP/s through the harness's own baseline path (Reference::time_forward,
// matched threads): says whether libtorch's BLAS is a fair baseline on this host.
json eager_matmul_probe(int threads, double budget_s) {
  spec::OpSpec spec;
  spec.name = "eager_matmul_probe";
  spec.source = "def forward(a: Tensor, b: Tensor) -> Tensor:\n    return torch.mm(a, b)\n";
  const int64_t n = 1024;
  for (const char* name : {"a", "b"}) {
    spec::InputSpec in;
    in.name = name;
    in.shape = {n, n};
    spec.inputs.push_back(in);
  }
  std::string error;
  auto reference = harness::Reference::compile(spec, error);
  if (!reference) return {{"error", error}};
  auto inputs = harness::make_inputs(spec, spec.main_shapes(), 1);
  json probe = {{"op", "torch.mm 1024x1024 @ 1024x1024 float32"}, {"blas", harness::blas_description()}};
  for (int t : {1, threads}) {
    auto timing = reference->time_forward({inputs}, t, budget_s, 0.02);
    if (!timing.error.empty()) return {{"error", timing.error}};
    probe["gflops_threads" + std::to_string(t)] = 2.0 * n * n * n / (timing.median_ms * 1e6);
  }
  return probe;
}

void summarise(json& result, const json& rows) {
  // Per level: coverage = correct / ops; geomean speedup over correct ops.
  for (int level : {1, 2}) {
    int ops = 0, ok = 0, eager_wins = 0, suspicious = 0, vs_compile = 0;
    double log_sum = 0, log_sum_unflagged = 0, log_sum_compile = 0;
    json wins = json::array(), not_correct = json::array();
    for (const auto& row : rows) {
      if (row.value("level", 0) != level) continue;
      ++ops;
      if (row.value("outcome", "") != "correct") {
        not_correct.push_back(row["name"]);
        continue;
      }
      ++ok;
      double s = row["speedup"].get<double>();
      log_sum += std::log(s);
      if (row.value("speedup_vs_compile", 0.0) > 0) {
        ++vs_compile;
        log_sum_compile += std::log(row["speedup_vs_compile"].get<double>());
      }
      if (row.value("suspicious", false)) ++suspicious;
      else log_sum_unflagged += std::log(s);
      if (s < 1.0) {
        ++eager_wins;
        wins.push_back({{"name", row["name"]}, {"speedup", round3(s)}, {"why", row.value("eager_wins_because", "")}});
      }
    }
    std::string l = std::to_string(level);
    result["ops_level" + l] = ops;
    result["correct_level" + l] = ok;
    result["coverage_level" + l] = ops ? double(ok) / ops : 0.0;
    result["geomean_speedup_level" + l] = ok ? std::exp(log_sum / ok) : 0.0;
    // GPU runs only: over the correct ops with a torch.compile baseline.
    if (vs_compile) result["geomean_speedup_vs_compile_level" + l] = std::exp(log_sum_compile / vs_compile);
    result["eager_wins_level" + l] = eager_wins;
    result["eager_wins_share_level" + l] = ok ? double(eager_wins) / ok : 0.0;
    result["eager_wins_ops_level" + l] = wins;
    result["not_correct_level" + l] = not_correct;
    result["suspicious_level" + l] = suspicious;
    // Speedups above the harness's sanity bound are flagged for review, not celebrated.
    result["geomean_speedup_unflagged_level" + l] = ok > suspicious ? std::exp(log_sum_unflagged / (ok - suspicious)) : 0.0;
  }
}

// --merge: the selected ops' rows replace theirs in the existing file; the run itself
// (command, load, time, probe) is recorded under merged_runs, and the summary recomputed.
int merge_rows(const std::string& path, const json& run, const json& rows,
               std::chrono::steady_clock::time_point started) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << "kforge-codegen bench --merge: cannot read " << path << "\n";
    return 1;
  }
  json existing = json::parse(in);
  json names = json::array();
  for (const auto& row : rows) {
    names.push_back(row["name"]);
    bool replaced = false;
    for (auto& old : existing["ops"])
      if (old["name"] == row["name"]) {
        old = row;
        old["merged"] = true;
        replaced = true;
      }
    if (!replaced) {
      existing["ops"].push_back(row);
      existing["ops"].back()["merged"] = true;
    }
  }
  json record = {{"command", run["command"]}, {"ops", names}, {"started", run["environment"]["started"]},
                 {"loadavg_start", run["environment"]["loadavg_start"]}, {"loadavg_end", load_average()},
                 {"eager_matmul_probe", run.value("eager_matmul_probe", json())},
                 {"wall_seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()}};
  existing["merged_runs"].push_back(record);
  summarise(existing, existing["ops"]);
  std::ofstream(path) << existing.dump(2) << "\n";
  std::cerr << "merged " << names.size() << " ops into " << path << ": coverage L1 " << existing["coverage_level1"]
            << " L2 " << existing["coverage_level2"] << "\n";
  return 0;
}

}  // namespace

int run_codegen_bench(int argc, char** argv) {
  Options opt;
  std::string command = "kforge-codegen bench";
  try {
    for (int arg_idx = 1; arg_idx < argc; ++arg_idx) {
      std::string a = argv[arg_idx];
      command += " " + a;
      auto next = [&]() -> std::string {
        if (arg_idx + 1 >= argc) throw std::runtime_error(a + " needs a value");
        command += std::string(" ") + argv[arg_idx + 1];
        return argv[++arg_idx];
      };
      if (a == "--suite") opt.suite = next();
      else if (a == "--filter") opt.filter = next();
      else if (a == "--out") opt.out = next();
      else if (a == "--max-schedules") opt.max_schedules = std::stoul(next());
      else if (a == "--first-schedules") opt.spread = false;
      else if (a == "--time-budget") opt.check.time_budget_s = std::stod(next());
      else if (a == "--trials") opt.check.trials = std::stoi(next());
      else if (a == "--device") opt.check.device = next();
      else if (a == "--target") opt.check.target = next();
      else if (a == "--no-compile") opt.check.compile_baseline = false;
      else if (a == "--merge") opt.merge = true;
      else if (a == "--resume") opt.resume = true;
      else if (a == "--timing-lock") opt.check.timing_lock = next();
      else if (a == "--shard") {
        std::string value = next();
        auto slash = value.find('/');
        if (slash == std::string::npos) throw std::runtime_error("--shard needs I/N, e.g. 0/4");
        opt.shard = std::stoul(value.substr(0, slash));
        opt.shards = std::stoul(value.substr(slash + 1));
        if (opt.shards == 0 || opt.shard >= opt.shards) throw std::runtime_error("--shard I/N needs 0 <= I < N");
      } else {
        std::cerr << "usage: kforge-codegen bench [--suite DIR] [--filter SUBSTR[,SUBSTR...]] [--max-schedules N] [--first-schedules] "
                     "[--time-budget S] [--trials K] [--device NAME] [--target opencl|cuda|triton] [--no-compile] [--out FILE] [--merge | --resume]\n"
                     "                            [--shard I/N] [--timing-lock FILE]\n"
                     "  --filter: the ops whose path contains any of the comma-separated substrings\n"
                     "  --max-schedules N: N schedules spread over each op's space (0: all); --first-schedules: its first N instead\n"
                     "  --shard I/N: only the ops whose index (sorted paths) % N == I; N runs side by side cover the suite\n"
                     "  --timing-lock FILE: runs side by side on one device take turns to time (flock on FILE)\n"
                     "  --target cuda|triton: the teacher's programs in that language on CUDA device 0 (--device: "
                     "index), timed against CUDA eager and torch.compile (--no-compile: eager only)\n"
                     "  --resume: keep the rows already in --out (a run cut short) and measure only the missing ops\n"
                     "  --merge: replace the rows of the selected ops in the existing --out file (the run is listed "
                     "under merged_runs) and recompute the summary\n";
        return 2;
      }
    }
  } catch (const std::exception& error) {  // a missing or malformed value: say which
    std::cerr << "kforge-codegen bench: " << error.what() << "\n";
    return 2;
  }
  codegen::Target target = codegen::Target::opencl;
  if (!codegen::parse_target(opt.check.target, target)) {
    std::cerr << "kforge-codegen bench: unknown target " << opt.check.target << " (opencl, cuda, triton)\n";
    return 2;
  }
  if (opt.out == Options{}.out && target != codegen::Target::opencl)
    opt.out = "bench/results/codegen_" + opt.check.target + ".json";
  // OpenCL runs need a device here; cuda and triton runs find theirs through the Checker.
  auto devices = harness::list_devices();
  if (devices.empty() && target == codegen::Target::opencl) {
    std::cerr << "kforge-codegen bench: no OpenCL device\n";
    return 1;
  }
  std::vector<std::string> filters;
  for (size_t start = 0;;) {
    const size_t comma = opt.filter.find(',', start);
    filters.push_back(opt.filter.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  auto selected = [&](const std::string& path) {
    return std::any_of(filters.begin(), filters.end(),
                       [&](const std::string& f) { return path.find(f) != std::string::npos; });
  };
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(opt.suite))
    if (entry.path().extension() == ".json" && selected(entry.path().string())) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  if (opt.shards > 1) {
    std::vector<fs::path> mine;
    for (size_t file_idx = 0; file_idx < files.size(); ++file_idx)
      if (file_idx % opt.shards == opt.shard) mine.push_back(files[file_idx]);
    files.swap(mine);
  }
  json result;
  std::time_t now = std::time(nullptr);
  char stamp[64];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  result["command"] = command;
  result["target"] = opt.check.target;
  result["protocol"] =
      target != codegen::Target::opencl
          ? "codegen::autotune -> harness::Checker per op, target " + opt.check.target + ": up to max_schedules "
            "schedules " + (opt.spread ? "spread over" : "first in") + " the op's space, each checked (" + std::to_string(opt.check.trials) +
            " seeded trials + secret seed + extra shapes, NaN poison, determinism, input-mutation check) on CUDA "
            "device 0; correct ones timed against CUDA eager and torch.compile (default mode) with the GPU protocol "
            "(docs/harness.md)"
          : "codegen::autotune -> harness::Checker per op: up to max_schedules schedules " +
                std::string(opt.spread ? "spread over" : "first in") + " the op's space, each "
      "checked in a kforge-sandbox child (" + std::to_string(opt.check.trials) +
      " seeded trials + secret seed + extra shapes, NaN poison, determinism, input-mutation check), correct ones timed "
      "with rotated inputs (warm-up, clFinish per run, stop at IQR/median < " + std::to_string(opt.check.target_iqr) +
      " or " + std::to_string(opt.check.time_budget_s) + " s) against libtorch eager timed the same way in the "
      "checking process with at::set_num_threads and openblas_set_num_threads = the device's compute units";
  json environment;
  result["environment"] = {{"started", stamp}, {"loadavg_start", load_average()}};
  // The Checker times eager with the chosen device's compute units; the probe does the same.
  int threads = devices.empty() ? 1 : devices.front().compute_units;
  for (const auto& device : devices)
    if (!opt.check.device.empty() && device.name.find(opt.check.device) != std::string::npos) {
      threads = device.compute_units;
      break;
    }
  auto started = std::chrono::steady_clock::now();
  // The probe measures libtorch's CPU BLAS: only meaningful for CPU (PoCL) runs.
  if (target == codegen::Target::opencl) {
    result["eager_matmul_probe"] = eager_matmul_probe(threads, std::max(0.5, opt.check.time_budget_s));
    std::cerr << "eager matmul probe: " << result["eager_matmul_probe"].dump() << "\n";
  }
  json rows = json::array();
  std::set<std::string> done;
  if (opt.resume && fs::exists(opt.out)) {
    // Device calls have a time limit: the same command, repeated, finishes the suite.
    for (const auto& row : json::parse(read_text(opt.out)).value("ops", json::array())) {
      rows.push_back(row);
      done.insert(row.value("name", ""));
    }
    std::cerr << "resuming " << opt.out << ": " << rows.size() << " ops already measured\n";
  }
  for (const auto& path : files) {
    if (done.count(path.stem().string())) continue;
    auto text = read_text(path);
    json meta = json::parse(text);
    auto parsed = spec::parse_op_spec(text);
    if (!parsed.ok()) {
      rows.push_back({{"name", path.stem().string()}, {"level", meta.value("level", 0)}, {"outcome", "spec_error"},
                      {"reason", spec::describe_errors(parsed.errors)}});
      continue;
    }
    auto op_started = std::chrono::steady_clock::now();
    json row = bench_op(parsed.spec, meta, opt, environment);
    row["bench_seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - op_started).count();
    std::cerr << row.value("level", 0) << " " << row["name"].get<std::string>() << " "
              << row["outcome"].get<std::string>();
    if (row.contains("speedup")) std::cerr << " speedup " << row["speedup"].get<double>();
    if (row.contains("speedup_vs_compile")) std::cerr << " vs compile " << row["speedup_vs_compile"].get<double>();
    if (row.contains("reason")) std::cerr << " (" << row["reason"].get<std::string>().substr(0, 160) << ")";
    std::cerr << " [" << row["bench_seconds"].get<double>() << " s, load " << load_average().substr(0, 14) << "]\n";
    rows.push_back(row);
    if (opt.merge) continue;
    // Partial results survive an interrupted run.
    json partial = result;
    partial["complete"] = false;
    for (const auto& [key, value] : environment.items()) partial["environment"][key] = value;
    partial["ops"] = rows;
    summarise(partial, rows);
    std::ofstream(opt.out) << partial.dump(2) << "\n";
  }
  if (opt.merge) return merge_rows(opt.out, result, rows, started);
  result["complete"] = true;
  for (const auto& [key, value] : environment.items()) result["environment"][key] = value;
  summarise(result, rows);
  result["environment"]["loadavg_end"] = load_average();
  result["environment"]["wall_seconds"] =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  result["ops"] = rows;
  std::ofstream out(opt.out);
  out << result.dump(2) << "\n";
  std::cerr << "wrote " << opt.out << ": coverage L1 " << result["coverage_level1"] << " L2 " << result["coverage_level2"]
            << ", geomean speedup L1 " << result["geomean_speedup_level1"] << " L2 " << result["geomean_speedup_level2"]
            << "\n";
  return 0;
}

int run_blas_probe(int argc, char** argv) {
  auto devices = harness::list_devices();
  int threads = argc > 1 ? std::stoi(argv[1]) : devices.empty() ? 1 : devices.front().compute_units;
  json probe = eager_matmul_probe(threads, 1.0);
  probe["loadavg"] = load_average();
  std::cout << probe.dump() << "\n";
  return probe.contains("error") ? 1 : 0;
}

}  // namespace kforge::bench
