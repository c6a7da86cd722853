// The `check` subcommand (check_command.h): reads the op JSON and the program,
// checks it with a Checker and prints CheckResult::to_json() on stdout.
// Test: ctest -R harness_check_command.
#include "worker/harness/check_command.h"

#include <fstream>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

#ifdef KFORGE_HARNESS_WITH_REFERENCE
#include "worker/harness/checker.h"
#else
#include "spec/op_spec.h"
#endif
#include "worker/harness/steady_allocator.h"

namespace kforge::harness {

using spec::describe_errors;
using spec::parse_op_spec;

namespace {

const char* kUsage =
    "usage: kforge-worker check OP.json PROGRAM... [--target opencl|cuda|triton] [--device NAME] [--trials K]\n"
    "                           [--no-time] [--time-budget S] [--no-compile-baseline] [--timing-lock FILE]\n"
    "                           [--spares N] [--spare-policy settle|gate|overlap] [--no-warm-up]\n"
    "                           [--baseline-allocator caching|default]\n"
    "  Several programs are checked in order by one Checker (one JSON line each; exit 0 if all correct).\n"
    "  Checks one kernel program (docs/kernel-format.md: .cl, .cu or a Triton .py) against an op\n"
    "  (docs/harness.md) and prints the result as JSON. On a GPU (cuda, triton, or opencl --device gpu)\n"
    "  it is timed against PyTorch CUDA eager and torch.compile. Exit status: 0 correct, 1 another\n"
    "  outcome, 2 bad usage or a bad op.\n"
    "  --timing-lock FILE: checks run side by side on one device take turns to time (flock on FILE;\n"
    "  default $KFORGE_GPU_TIMING_LOCK), so they can compile and verify in parallel.\n"
    "  --spares N, --spare-policy P: children started ahead of need, and how they keep out of timed\n"
    "  runs (docs/harness.md; default 1 and settle on a CPU, 2 and gate on a GPU).\n"
    "  --no-warm-up: children build no trivial kernel before they are ready (CheckOptions::warm_up).\n"
    "  --baseline-allocator A: where the CPU eager baseline's tensors come from while it is timed:\n"
    "  caching (default: freed blocks reused, a long-running process's steady state) or default\n"
    "  (libtorch's allocator, glibc malloc: big outputs page-faulted on every call).\n"
    "  The secret seed comes from KFORGE_SECRET_SEED (never from the command line).\n";

bool read_file(const std::string& path, std::string& text) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return false;
  std::ostringstream buffer;
  buffer << file.rdbuf();
  text = buffer.str();
  return true;
}

}  // namespace

int check_command(int argc, char** argv) {
  std::vector<std::string> paths;
  struct {
    std::string target = "opencl";
    std::string device;
    bool compile_baseline = true;
    std::string timing_lock = std::getenv("KFORGE_GPU_TIMING_LOCK") ? std::getenv("KFORGE_GPU_TIMING_LOCK") : "";
    int trials = 5;
    bool time = true;
    double time_budget_s = 1.0;
    int spares = 0;
    std::string spare_policy;
    bool warm_up = true;
    BaselineAllocator baseline_allocator = BaselineAllocator::caching;
  } options;
  for (int arg_idx = 1; arg_idx < argc; ++arg_idx) {
    std::string arg = argv[arg_idx];
    auto value = [&]() -> std::string {
      if (arg_idx + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++arg_idx];
    };
    try {
      if (arg == "--help" || arg == "-h") {
        std::cout << kUsage;
        return 0;
      } else if (arg == "--device") {
        options.device = value();
      } else if (arg == "--target") {
        options.target = value();
        if (options.target != "opencl" && options.target != "cuda" && options.target != "triton")
          throw std::invalid_argument("is '" + options.target + "'; use opencl, cuda or triton");
      } else if (arg == "--timing-lock") {
        options.timing_lock = value();
      } else if (arg == "--no-compile-baseline") {
        options.compile_baseline = false;
      } else if (arg == "--trials") {
        options.trials = std::stoi(value());
      } else if (arg == "--no-time") {
        options.time = false;
      } else if (arg == "--time-budget") {
        options.time_budget_s = std::stod(value());
      } else if (arg == "--spares") {
        options.spares = std::stoi(value());
        if (options.spares < 1 || options.spares > 8) throw std::invalid_argument("must be 1 to 8");
      } else if (arg == "--spare-policy") {
        options.spare_policy = value();  // checked by Checker::create
      } else if (arg == "--no-warm-up") {
        options.warm_up = false;
      } else if (arg == "--baseline-allocator") {
        std::string name = value();
        if (!parse_baseline_allocator(name, options.baseline_allocator))
          throw std::invalid_argument("is '" + name + "'; use caching or default");
      } else if (arg.rfind("--", 0) == 0) {
        std::cerr << "kforge-worker check: unknown option " << arg << "\n" << kUsage;
        return 2;
      } else {
        paths.push_back(arg);
      }
    } catch (const std::exception& e) {
      std::cerr << "kforge-worker check: " << arg << ": " << e.what() << "\n";
      return 2;
    }
  }
  if (paths.size() < 2) {
    std::cerr << kUsage;
    return 2;
  }
  std::string op_text;
  if (!read_file(paths[0], op_text)) {
    std::cerr << "kforge-worker check: cannot read op file " << paths[0] << "\n";
    return 2;
  }
  std::vector<std::string> programs(paths.size() - 1);
  for (size_t path_idx = 1; path_idx < paths.size(); ++path_idx)
    if (!read_file(paths[path_idx], programs[path_idx - 1])) {
      std::cerr << "kforge-worker check: cannot read kernel file " << paths[path_idx] << "\n";
      return 2;
    }
  auto parsed = parse_op_spec(op_text);
  if (!parsed.ok()) {
    std::cerr << "kforge-worker check: " << paths[0] << ": " << describe_errors(parsed.errors) << "\n";
    return 2;
  }
#ifndef KFORGE_HARNESS_WITH_REFERENCE
  std::cerr << "kforge-worker check: this build has no libtorch (KFORGE_WITH_TORCH=OFF); the reference cannot run\n";
  return 2;
#else
  std::string error;
  CheckOptions check_options;
  check_options.target = options.target;
  check_options.device = options.device;
  check_options.compile_baseline = options.compile_baseline;
  check_options.timing_lock = options.timing_lock;
  check_options.trials = options.trials;
  check_options.time = options.time;
  check_options.time_budget_s = options.time_budget_s;
  check_options.spares = options.spares;
  check_options.spare_policy = options.spare_policy;
  check_options.warm_up = options.warm_up;
  check_options.baseline_allocator = options.baseline_allocator;
  auto checker = Checker::create(parsed.spec, check_options, error);
  if (!checker) {
    std::cerr << "kforge-worker check: " << error << "\n";
    return 2;
  }
  bool all_correct = true;
  for (const auto& program : programs) {
    auto result = checker->check(program);
    std::cout << result.to_json() << std::endl;
    all_correct = all_correct && result.outcome == Outcome::correct;
  }
  return all_correct ? 0 : 1;
#endif
}

}  // namespace kforge::harness
