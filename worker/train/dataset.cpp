// SFT dataset builder; see dataset.h. Only ops the caller passes are used: the CLI
// passes the train split, so held-out ops never reach the SFT corpus. Tested by ctest -R train_test.
#include "worker/train/dataset.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <stdexcept>

#include "common/log.h"
#include "worker/codegen/codegen.h"

namespace kforge::train {

std::vector<DatasetRecord> build_sft_dataset(const std::vector<SuiteOp>& ops, const DatasetOptions& options,
                                             DatasetStats* stats, const std::function<void(int, int)>& on_op) {
  DatasetStats local;
  std::vector<DatasetRecord> records;
  for (size_t op_idx = 0; op_idx < ops.size(); ++op_idx) {
    const SuiteOp& op = ops[op_idx];
    ++local.ops;
    codegen::Analysis analysis = codegen::analyze(op.spec);
    std::vector<codegen::Schedule> space = analysis.ok() ? codegen::schedule_space(analysis) : std::vector<codegen::Schedule>{};
    if (space.empty()) {
      ++local.ops_unsupported;
      log_info("train", "teacher cannot lower op", {{"op", op.spec.name}, {"why", analysis.unsupported}});
      if (on_op) on_op(op_idx + 1, ops.size());
      continue;
    }
    std::string error;
    auto checker = harness::Checker::create(shrink_for_checking(op.spec, options.max_check_elements), options.check, error);
    if (!checker) throw std::runtime_error("op " + op.spec.name + " fails its own reference: " + error);
    std::string prompt = render_prompt(prompt_op(op.spec), options.style);
    // Spread the picks over the whole space so variants differ in more than one knob.
    size_t picks = std::min<size_t>(options.max_variants_per_op, space.size());
    bool any = false;
    for (size_t pick = 0; pick < picks; ++pick) {
      const codegen::Schedule& schedule = space[pick * space.size() / picks];
      codegen::Generated generated = codegen::emit_program(analysis, schedule);
      if (!generated.ok()) continue;
      ++local.variants_checked;
      harness::CheckResult result = checker->check(generated.program);
      if (result.outcome != harness::Outcome::correct) {
        log_warn("train", "teacher variant failed the harness",
                 {{"op", op.spec.name}, {"schedule", schedule.label()},
                  {"outcome", harness::outcome_name(result.outcome)}, {"message", result.message.substr(0, 200)}});
        continue;
      }
      ++local.variants_correct;
      any = true;
      records.push_back({op.spec.name, schedule.label(), prompt, generated.program, result.speedup});
    }
    local.ops_with_examples += any ? 1 : 0;
    if (on_op) on_op(op_idx + 1, ops.size());
  }
  if (stats) *stats = local;
  return records;
}

void write_dataset_jsonl(const std::string& path, const std::vector<DatasetRecord>& records) {
  std::ofstream file(path);
  for (const auto& record : records)
    file << nlohmann::json{{"prompt", record.prompt}, {"completion", record.completion}, {"op", record.op},
                           {"schedule", record.schedule}, {"speedup", record.speedup}}
                .dump()
         << "\n";
  if (!file) throw std::runtime_error("cannot write " + path);
}

}  // namespace kforge::train
