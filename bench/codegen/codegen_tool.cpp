// kforge-codegen: the teacher compiler from the command line.
//   kforge-codegen emit OP.json [SCHEDULE_INDEX] [--target opencl|cuda|triton]   print the program (default schedule 0)
//   kforge-codegen schedules OP.json [--target T]  list the schedule space of a target
//   kforge-codegen dump OP.json... [--target T]    every schedule's program of every op (all targets unless
//                                                  --target): diff two builds' dumps to see what a codegen
//                                                  change did to the emitted programs
//   kforge-codegen autotune OP.json [MAX]          check up to MAX schedules through the harness, print the fastest
//   kforge-codegen blas [THREADS]                  eager matmul GFLOP/s through the harness baseline path
// The benchmark runner (bench/codegen/run.sh) drives `kforge-codegen bench`.
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include "bench/codegen/bench_runner.h"
#include "worker/codegen/autotune.h"
#include "worker/codegen/codegen.h"

namespace {

bool load(const std::string& path, kforge::spec::OpSpec& spec) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << "kforge-codegen: cannot read " << path << "\n";
    return false;
  }
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = kforge::spec::parse_op_spec(text.str());
  if (!parsed.ok()) {
    std::cerr << "kforge-codegen: " << path << ": " << kforge::spec::describe_errors(parsed.errors) << "\n";
    return false;
  }
  spec = parsed.spec;
  return true;
}

// "#### OP.json TARGET LABEL" and the program (or why there is none), for every schedule of
// every op; a refused op says so in its header line. Exit 2 if an op file cannot be read.
int dump(const std::vector<std::string>& paths, kforge::codegen::Target only, bool one_target) {
  using kforge::codegen::Target;
  int status = 0;
  for (const auto& path : paths) {
    kforge::spec::OpSpec spec;
    if (!load(path, spec)) {
      status = 2;
      continue;
    }
    auto analysis = kforge::codegen::analyze(spec);
    if (!analysis.ok()) {
      std::cout << "#### " << path << " unsupported: " << analysis.unsupported << "\n";
      continue;
    }
    for (Target target : {Target::opencl, Target::cuda, Target::triton}) {
      if (one_target && target != only) continue;
      for (const auto& schedule : kforge::codegen::schedule_space(analysis, target)) {
        auto gen = kforge::codegen::emit_program(analysis, schedule, target);
        std::cout << "#### " << path << " " << kforge::codegen::target_name(target) << " " << schedule.label() << "\n"
                  << (gen.ok() ? gen.program : "unsupported: " + gen.unsupported + "\n");
      }
    }
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  // `--target T` may come anywhere after the command (emit and schedules).
  kforge::codegen::Target target = kforge::codegen::Target::opencl;
  std::vector<char*> args;
  for (int arg_idx = 0; arg_idx < argc; ++arg_idx) {
    std::string arg = argv[arg_idx];
    if (arg == "--target" && arg_idx + 1 < argc) {
      if (!kforge::codegen::parse_target(argv[++arg_idx], target)) {
        std::cerr << "kforge-codegen: unknown target " << argv[arg_idx] << " (opencl, cuda, triton)\n";
        return 2;
      }
      continue;
    }
    args.push_back(argv[arg_idx]);
  }
  std::string cmd = argc > 1 ? argv[1] : "";
  bool target_given = false;
  for (int arg_idx = 1; arg_idx < argc; ++arg_idx) target_given |= std::string(argv[arg_idx]) == "--target";
  if (cmd != "bench" && cmd != "blas") {
    argc = static_cast<int>(args.size());
    argv = args.data();
  }
  if (cmd == "bench") return kforge::bench::run_codegen_bench(argc - 1, argv + 1);
  if (cmd == "blas") return kforge::bench::run_blas_probe(argc - 1, argv + 1);
  if ((cmd != "emit" && cmd != "schedules" && cmd != "autotune" && cmd != "dump") || argc < 3) {
    std::cerr << "usage: kforge-codegen emit OP.json [SCHEDULE_INDEX] [--target T] | schedules OP.json [--target T] | "
                 "dump OP.json... [--target T] | autotune OP.json [MAX] | bench [--help] | blas [THREADS]\n";
    return 2;
  }
  if (cmd == "dump") return dump(std::vector<std::string>(argv + 2, argv + argc), target, target_given);
  kforge::spec::OpSpec spec;
  if (!load(argv[2], spec)) return 2;
  if (cmd == "autotune") {
    size_t max = argc > 3 ? std::stoul(argv[3]) : 6;
    auto result = kforge::codegen::autotune(spec, kforge::harness::CheckOptions{}, max);
    for (const auto& v : result.variants)
      std::cerr << v.schedule.label() << " " << v.outcome << " " << v.kernel_ms << " ms speedup " << v.speedup
                << (v.message.empty() ? "" : " (" + v.message.substr(0, 120) + ")") << "\n";
    if (!result.ok()) {
      std::cout << "unsupported: " << result.unsupported << "\n";
      return 1;
    }
    std::cerr << "best " << result.schedule.label() << " " << result.kernel_ms << " ms, speedup " << result.speedup
              << "\n";
    std::cout << result.program;
    return 0;
  }
  auto analysis = kforge::codegen::analyze(spec);
  if (!analysis.ok()) {
    std::cout << "unsupported: " << analysis.unsupported << "\n";
    return 1;
  }
  auto space = kforge::codegen::schedule_space(analysis, target);
  if (cmd == "schedules") {
    std::cout << analysis.describe() << ": " << space.size() << " schedules\n";
    for (size_t idx = 0; idx < space.size(); ++idx) std::cout << idx << " " << space[idx].label() << "\n";
    return 0;
  }
  size_t index = argc > 3 ? std::stoul(argv[3]) : 0;
  if (index > 0 && index >= space.size()) {
    std::cerr << "kforge-codegen: schedule " << index << " is past the op's " << space.size() << " "
              << target_name(target) << " schedules (kforge-codegen schedules " << argv[2] << " lists them)\n";
    return 2;
  }
  kforge::codegen::Schedule schedule = index < space.size() ? space[index] : kforge::codegen::Schedule{};
  auto gen = kforge::codegen::emit_program(analysis, schedule, target);
  if (!gen.ok()) {
    std::cout << "unsupported: " << gen.unsupported << "\n";
    return 1;
  }
  std::cout << gen.program;
  return 0;
}
