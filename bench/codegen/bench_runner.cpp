// The codegen benchmark (see bench_runner.h): per op, analyse, try up to N schedules
// (verify each on the extra shapes and the main shape, time the correct ones), keep
// the fastest, time libtorch eager with matched threads in the same process.
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
#include <sstream>

#include "worker/codegen/cl_smoke.h"
#include "worker/codegen/codegen.h"

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

// Bytes moved at least once (inputs + output) and matmul FLOPs, for GB/s and GFLOP/s.
double min_bytes(const harness::OpSpec& spec, const harness::HostTensor& out) {
  double bytes = static_cast<double>(out.data.size());
  for (const auto& in : spec.inputs) bytes += harness::shape_numel(in.shape) * harness::dtype_size(in.dtype);
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

struct Options {
  std::string suite = "suite";
  std::string filter;
  std::string out = "bench/results/codegen.json";
  size_t max_schedules = 6;
  double time_budget_s = 1.5;
};

json bench_op(const harness::OpSpec& spec, const json& meta, const codegen::SmokeRunner& runner, const Options& opt,
              int threads) {
  json row = {{"name", spec.name}, {"level", meta.value("level", 0)}, {"category", meta.value("category", "")},
              {"split", meta.value("split", "")}};
  auto analysis = codegen::analyze(spec);
  if (!analysis.ok()) {
    row["outcome"] = "unsupported";
    row["reason"] = analysis.unsupported;
    return row;
  }
  row["stages"] = analysis.describe();
  std::string error;
  auto reference = harness::Reference::compile(spec, error);
  if (!reference) {
    row["outcome"] = "reference_error";
    row["reason"] = error;
    return row;
  }
  std::vector<std::string> names;
  for (const auto& in : spec.inputs) names.push_back(in.name);
  // Shape sets: the extra (odd) shapes for verification, then the main shape.
  std::vector<harness::ShapeSet> shape_sets = spec.extra_shapes;
  shape_sets.push_back(spec.main_shapes());
  std::vector<std::vector<harness::HostTensor>> inputs;
  std::vector<harness::HostTensor> expected;
  for (size_t set_idx = 0; set_idx < shape_sets.size(); ++set_idx) {
    inputs.push_back(harness::make_inputs(spec, shape_sets[set_idx], 1000 + set_idx));
    auto ref = reference->run(inputs.back());
    if (!ref.error.empty() || ref.outputs.size() != 1) {
      row["outcome"] = "reference_error";
      row["reason"] = ref.error;
      return row;
    }
    expected.push_back(ref.outputs[0]);
  }
  auto eager = reference->time_forward({inputs.back()}, threads, opt.time_budget_s, 0.05);
  row["eager_ms"] = eager.median_ms;

  auto space = codegen::schedule_space(analysis);
  row["schedule_space"] = space.size();
  // Spread the tried schedules over the space (it is ordered by knob families).
  std::vector<codegen::Schedule> tried;
  size_t count = std::min(space.size(), opt.max_schedules);
  for (size_t pick = 0; pick < count; ++pick) tried.push_back(space[pick * space.size() / count]);
  double best_ms = 0;
  std::string best_label, first_failure;
  int correct = 0;
  json variants = json::array();
  for (const auto& schedule : tried) {
    auto gen = codegen::emit_program(analysis, schedule);
    json v = {{"schedule", schedule.label()}};
    auto parsed = harness::parse_program(gen.program);
    std::string failure = !gen.ok() ? "unsupported: " + gen.unsupported : !parsed.ok() ? "format_error: " + parsed.error : "";
    codegen::SmokeRun timed;
    for (size_t set_idx = 0; failure.empty() && set_idx < shape_sets.size(); ++set_idx) {
      bool main = set_idx + 1 == shape_sets.size();
      auto run = runner.run(parsed.program, names, inputs[set_idx], expected[set_idx].shape, main ? 50 : 0,
                            opt.time_budget_s);
      if (!run.error.empty()) failure = run.error;
      else {
        auto mismatch = codegen::compare_outputs(expected[set_idx], run.output, spec.atol, spec.rtol);
        if (!mismatch.empty())
          failure = "wrong_output: " + mismatch + " at " + harness::shape_to_string(expected[set_idx].shape);
      }
      if (main) timed = run;
    }
    if (failure.empty()) {
      ++correct;
      v["outcome"] = "correct";
      v["kernel_ms"] = timed.median_ms;
      if (best_label.empty() || timed.median_ms < best_ms) {
        best_ms = timed.median_ms;
        best_label = schedule.label();
      }
    } else {
      v["outcome"] = failure.substr(0, failure.find(':'));
      v["message"] = failure.substr(0, 300);
      if (first_failure.empty()) first_failure = failure.substr(0, 300);
    }
    variants.push_back(v);
  }
  row["schedules_tried"] = tried.size();
  row["schedules_correct"] = correct;
  row["variants"] = variants;
  if (best_label.empty()) {
    row["outcome"] = first_failure.substr(0, first_failure.find(':'));
    row["reason"] = first_failure;
    return row;
  }
  row["outcome"] = "correct";
  row["best_schedule"] = best_label;
  row["kernel_ms"] = best_ms;
  row["speedup"] = eager.median_ms / best_ms;
  row["gbps"] = min_bytes(spec, expected.back()) / (best_ms * 1e6);
  double flops = matmul_flops(analysis);
  if (flops > 0) row["gflops"] = flops / (best_ms * 1e6);
  if (!first_failure.empty()) row["variant_failure"] = first_failure;
  return row;
}

}  // namespace

int run_codegen_bench(int argc, char** argv) {
  Options opt;
  std::string command = "kforge-codegen bench";
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
    else if (a == "--time-budget") opt.time_budget_s = std::stod(next());
    else {
      std::cerr << "usage: kforge-codegen bench [--suite DIR] [--filter SUBSTR] [--max-schedules N] "
                   "[--time-budget S] [--out FILE]\n";
      return 2;
    }
  }
  std::string error;
  auto runner = codegen::SmokeRunner::create(error);
  if (!runner) {
    std::cerr << "kforge-codegen bench: " << error << "\n";
    return 1;
  }
  const int threads = runner->compute_units();
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(opt.suite))
    if (entry.path().extension() == ".json" && entry.path().string().find(opt.filter) != std::string::npos)
      files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  json result;
  std::time_t now = std::time(nullptr);
  char stamp[64];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  result["command"] = command;
  result["environment"] = {{"device", runner->device_name()}, {"compute_units", threads},
                           {"torch_version", harness::torch_version_string()}, {"eager_threads", threads},
                           {"started", stamp}, {"loadavg_start", load_average()},
                           {"verifier", "interim codegen smoke runner (NaN-filled output, extra + main shapes, op "
                                        "tolerance); timing: median wall time of launches + clFinish vs "
                                        "harness::Reference::time_forward, same process, same thread count"}};
  json rows = json::array();
  auto started = std::chrono::steady_clock::now();
  for (const auto& path : files) {
    auto text = read_text(path);
    json meta = json::parse(text);
    auto parsed = harness::parse_op_spec(text);
    if (!parsed.ok()) {
      rows.push_back({{"name", path.stem().string()}, {"outcome", "spec_error"},
                      {"reason", harness::describe_errors(parsed.errors)}});
      continue;
    }
    json row = bench_op(parsed.spec, meta, *runner, opt, threads);
    std::cerr << row.value("level", 0) << " " << row["name"].get<std::string>() << " " << row["outcome"].get<std::string>();
    if (row.contains("speedup")) std::cerr << " speedup " << row["speedup"].get<double>();
    if (row.contains("reason")) std::cerr << " (" << row["reason"].get<std::string>().substr(0, 160) << ")";
    std::cerr << "\n";
    rows.push_back(row);
    // Partial results survive an interrupted run.
    json partial = result;
    partial["complete"] = false;
    partial["ops"] = rows;
    std::ofstream(opt.out) << partial.dump(2) << "\n";
  }
  result["complete"] = true;
  // Summary per level: coverage = correct / ops; geomean speedup over correct ops.
  for (int level : {1, 2}) {
    int ops = 0, ok = 0, eager_wins = 0;
    double log_sum = 0;
    json wins = json::array();
    for (const auto& row : rows) {
      if (row.value("level", 0) != level) continue;
      ++ops;
      if (row.value("outcome", "") != "correct") continue;
      ++ok;
      double s = row["speedup"].get<double>();
      log_sum += std::log(s);
      if (s < 1.0) {
        ++eager_wins;
        wins.push_back(row["name"]);
      }
    }
    std::string l = std::to_string(level);
    result["ops_level" + l] = ops;
    result["correct_level" + l] = ok;
    result["coverage_level" + l] = ops ? double(ok) / ops : 0.0;
    result["geomean_speedup_level" + l] = ok ? std::exp(log_sum / ok) : 0.0;
    result["eager_wins_level" + l] = eager_wins;
    result["eager_wins_share_level" + l] = ok ? double(eager_wins) / ok : 0.0;
    result["eager_wins_ops_level" + l] = wins;
  }
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

}  // namespace kforge::bench
