// SFT dataset builder; see dataset.h. Only ops the caller passes are used: the CLI
// passes the train split, and a held-out op throws, so held-out ops never reach the SFT
// corpus. Tested by ctest -R train_test and ctest -R train_harness_test.
#include "worker/train/dataset.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <stdexcept>

#include "common/log.h"
#include "worker/codegen/codegen.h"

namespace kforge::train {

namespace {

// One op in one target: up to max_variants_per_op schedules, each verified by `checker`.
void add_target_variants(const SuiteOp& op, const codegen::Analysis& analysis, codegen::Target target,
                         harness::Checker& checker, const DatasetOptions& options, DatasetStats& stats,
                         std::vector<DatasetRecord>& records, bool& any) {
  std::vector<codegen::Schedule> space = codegen::schedule_space(analysis, target);
  std::string target_text = codegen::target_name(target);
  std::string prompt = render_prompt(prompt_op(op.spec, target_text), options.style);
  // Spread the picks over the whole space so variants differ in more than one knob.
  size_t picks = std::min<size_t>(options.max_variants_per_op, space.size());
  for (size_t pick = 0; pick < picks; ++pick) {
    const codegen::Schedule& schedule = space[pick * space.size() / picks];
    codegen::Generated generated = codegen::emit_program(analysis, schedule, target);
    if (!generated.ok()) continue;
    ++stats.variants_checked;
    harness::CheckResult result = checker.check(generated.program);
    if (result.outcome != harness::Outcome::correct) {
      log_warn("train", "teacher variant failed the harness",
               {{"op", op.spec.name}, {"target", target_text}, {"schedule", schedule.label()},
                {"outcome", harness::outcome_name(result.outcome)}, {"message", result.message.substr(0, 200)}});
      continue;
    }
    ++stats.variants_correct;
    any = true;
    records.push_back({op.spec.name, schedule.label(), target_text, prompt, generated.program, result.speedup});
  }
}

// TorchInductor's kernels for `op` (triton on a GPU), verified by `checker` like the teacher's.
void add_inductor_variant(const SuiteOp& op, harness::Checker& checker, const DatasetOptions& options,
                          DatasetStats& stats, std::vector<DatasetRecord>& records, bool& any) {
  harness::InductorHarvest harvest = checker.harvest_inductor();
  if (!harvest.ok()) {
    stats.inductor_refused.push_back(op.spec.name + ": " + harvest.reason.substr(0, 300));
    return;
  }
  ++stats.inductor_harvested;
  harness::CheckResult result = checker.check(harvest.source);
  if (result.outcome != harness::Outcome::correct) {
    log_warn("train", "Inductor's kernels failed the harness",
             {{"op", op.spec.name}, {"outcome", harness::outcome_name(result.outcome)},
              {"message", result.message.substr(0, 200)}});
    return;
  }
  ++stats.inductor_correct;
  any = true;
  std::string prompt = render_prompt(prompt_op(op.spec, "triton"), options.style);
  DatasetRecord record{op.spec.name, "inductor", "triton", prompt, harvest.source, result.speedup};
  record.generator = "inductor";
  record.provenance = harvest.provenance;
  records.push_back(std::move(record));
}

// Text with every run of whitespace removed, so a reindented source still matches.
std::string squeeze(const std::string& text) {
  std::string out;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) out += c;
  return out;
}

// What identifies an op in a prompt: its inputs (names, dtypes, shapes) and its source,
// from "### inputs" to the line after the source block, whitespace removed; "" without one.
std::string op_identity(const std::string& prompt) {
  size_t start = prompt.find("### inputs\n");
  size_t source = prompt.find("### source\n", start == std::string::npos ? 0 : start);
  if (start == std::string::npos || source == std::string::npos) return "";
  size_t end = std::min(prompt.find("\n### ", source + 10), prompt.find("<|im_end|>", source));
  return squeeze(prompt.substr(start, end == std::string::npos ? std::string::npos : end - start));
}

}  // namespace

std::vector<std::string> heldout_leaks(const std::vector<SftExample>& pairs, const std::vector<SuiteOp>& heldout) {
  std::set<std::string> seen;
  for (const auto& pair : pairs) seen.insert(op_identity(pair.prompt));
  std::vector<std::string> leaks;
  for (const auto& op : heldout) {
    std::string identity = op_identity(render_prompt(prompt_op(op.spec), PromptStyle::kforge_tiny));
    if (!identity.empty() && seen.count(identity)) leaks.push_back(op.spec.name);
  }
  return leaks;
}

std::vector<DatasetRecord> build_sft_dataset(const std::vector<SuiteOp>& ops, const DatasetOptions& options,
                                             DatasetStats* stats, const std::function<void(int, int)>& on_op) {
  std::vector<codegen::Target> targets;
  for (const auto& name : options.targets) {
    codegen::Target target;
    if (!codegen::parse_target(name, target)) throw std::invalid_argument("dataset: unknown target '" + name + "'");
    targets.push_back(target);
  }
  DatasetStats local;
  std::vector<DatasetRecord> records;
  for (size_t op_idx = 0; op_idx < ops.size(); ++op_idx) {
    const SuiteOp& op = ops[op_idx];
    if (op.split == "heldout")
      throw std::invalid_argument("dataset: op " + op.spec.name + " is in the held-out split and must not be trained on");
    ++local.ops;
    codegen::Analysis analysis = codegen::analyze(op.spec);
    analysis.role_kernel_names = options.role_kernel_names;
    const bool inductor_wanted =
        options.inductor && std::find(targets.begin(), targets.end(), codegen::Target::triton) != targets.end();
    const bool teacher_lowers = analysis.ok() && !codegen::schedule_space(analysis).empty();
    if (!teacher_lowers) {
      ++local.ops_unsupported;
      log_info("train", "teacher cannot lower op", {{"op", op.spec.name}, {"why", analysis.unsupported}});
      if (!inductor_wanted) {  // Inductor's kernels may still cover it
        if (on_op) on_op(op_idx + 1, ops.size());
        continue;
      }
    }
    bool any = false;
    for (codegen::Target target : targets) {
      const bool inductor_here = inductor_wanted && target == codegen::Target::triton;
      if (!teacher_lowers && !inductor_here) continue;
      std::string target_text = codegen::target_name(target);
      auto& unavailable = local.targets_unavailable;
      if (std::find(unavailable.begin(), unavailable.end(), target_text) != unavailable.end()) continue;
      harness::CheckOptions check = options.check;
      check.target = target_text;
      std::string error;
      auto checker = harness::Checker::create(shrink_for_checking(op.spec, options.max_check_elements), check, error);
      if (!checker && target != codegen::Target::opencl) {
        // No GPU (or no Triton) here: that target's variants cannot be verified on this host.
        log_warn("train", "dataset target not checkable on this host", {{"target", target_text}, {"why", error}});
        unavailable.push_back(target_text);
        continue;
      }
      if (!checker) {  // a broken op costs its own pairs, not the rest of the run
        log_warn("train", "op fails its own reference; skipped", {{"op", op.spec.name}, {"why", error}});
        local.ops_failed.push_back(op.spec.name + ": " + error.substr(0, 300));
        break;
      }
      if (teacher_lowers) add_target_variants(op, analysis, target, *checker, options, local, records, any);
      if (inductor_here) add_inductor_variant(op, *checker, options, local, records, any);
    }
    local.ops_with_examples += any ? 1 : 0;
    if (on_op) on_op(op_idx + 1, ops.size());
  }
  if (stats) *stats = local;
  return records;
}

void write_dataset_jsonl(const std::string& path, const std::vector<DatasetRecord>& records) {
  std::ofstream file(path);
  for (const auto& record : records) {
    nlohmann::json line = {{"prompt", record.prompt},     {"completion", record.completion}, {"op", record.op},
                           {"schedule", record.schedule}, {"target", record.target},         {"speedup", record.speedup},
                           {"generator", record.generator}};
    if (!record.provenance.empty()) line["provenance"] = nlohmann::json::parse(record.provenance, nullptr, false);
    file << line.dump() << "\n";
  }
  if (!file) throw std::runtime_error("cannot write " + path);
}

}  // namespace kforge::train
