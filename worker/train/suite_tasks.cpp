// Suite loading, prompts and the harness-backed checker; see suite_tasks.h.
// Tested by tests/worker/train/harness_training_test.cpp (real PoCL, label slow).
#include "worker/train/suite_tasks.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace kforge::train {

std::vector<SuiteOp> load_suite(const std::string& suite_dir, const std::string& split) {
  std::vector<fs::path> files;
  std::error_code ec;
  if (!fs::is_directory(suite_dir, ec)) throw std::runtime_error("suite directory " + suite_dir + " does not exist");
  for (const auto& entry : fs::recursive_directory_iterator(suite_dir))
    if (entry.path().extension() == ".json" && entry.path().parent_path().filename().string().rfind("level", 0) == 0)
      files.push_back(entry.path());
  std::sort(files.begin(), files.end(), [](const fs::path& a, const fs::path& b) { return a.filename() < b.filename(); });
  std::vector<SuiteOp> ops;
  for (const auto& path : files) {
    std::ifstream in(path);
    nlohmann::json doc;
    try {
      doc = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(path.string() + ": not JSON (" + e.what() + ")");
    }
    SuiteOp op;
    op.split = doc.value("split", std::string("train"));
    op.level = doc.value("level", 1);
    op.category = doc.value("category", std::string());
    if (!split.empty() && op.split != split) continue;
    for (const char* suite_field : {"split", "level", "category"}) doc.erase(suite_field);
    op.spec_json = doc.dump();
    auto parsed = spec::parse_op_spec(op.spec_json);
    if (!parsed.ok()) throw std::runtime_error(path.string() + ": " + spec::describe_errors(parsed.errors));
    op.spec = parsed.spec;
    ops.push_back(std::move(op));
  }
  return ops;
}

PromptOp prompt_op(const spec::OpSpec& spec, const std::string& target) {
  PromptOp op;
  op.name = spec.name;
  op.source = spec.source;
  op.target = target;
  for (const auto& input : spec.inputs) op.inputs.push_back({input.name, spec::dtype_name(input.dtype), input.shape});
  return op;
}

std::vector<Task> suite_tasks(const std::vector<SuiteOp>& ops, PromptStyle style, const std::string& target) {
  std::vector<Task> tasks;
  for (const auto& op : ops) tasks.push_back({op.spec.name, render_prompt(prompt_op(op.spec, target), style), op.spec_json});
  return tasks;
}

spec::OpSpec shrink_for_checking(const spec::OpSpec& spec, int64_t max_elements) {
  if (max_elements <= 0) return spec;
  // Without extra shapes probe_shapes scales the main shapes instead of picking an extra set.
  spec::OpSpec main_only = spec;
  main_only.extra_shapes.clear();
  bool scaled = false;
  spec::ShapeSet shapes = harness::probe_shapes(main_only, max_elements, scaled);
  spec::OpSpec out = spec;
  for (auto& input : out.inputs)
    if (auto found = shapes.find(input.name); found != shapes.end()) input.shape = found->second;
  // An integer input drawn from [a, N) where N is a dimension's size indexes that dimension
  // (embedding rows, gather positions): when the dimension shrinks, so does the range.
  for (auto& index : out.inputs) {
    if (index.dist.kind != spec::DistKind::randint) continue;
    const double high = index.dist.b;
    for (size_t input_idx = 0; input_idx < spec.inputs.size(); ++input_idx) {
      const auto& before = spec.inputs[input_idx].shape;
      const auto& after = out.inputs[input_idx].shape;
      for (size_t dim = 0; dim < before.size() && dim < after.size(); ++dim)
        if (static_cast<double>(before[dim]) == high && after[dim] < before[dim])
          index.dist.b = std::max(index.dist.a + 1, std::min(index.dist.b, static_cast<double>(after[dim])));
    }
  }
  return out;
}

CheckSummary summarize_check(const harness::CheckResult& result) {
  CheckSummary summary;
  summary.outcome = result.outcome;
  summary.speedup = result.speedup;
  summary.speedup_vs_compile = result.speedup_vs_compile;
  summary.suspicious = result.suspicious;
  summary.weak_test = result.weak_test;
  summary.message = result.message;
  return summary;
}

HarnessChecker::HarnessChecker(const harness::CheckOptions& options, int64_t max_check_elements, size_t max_idle)
    : options_(options), max_check_elements_(max_check_elements), max_idle_(max_idle) {}
HarnessChecker::~HarnessChecker() = default;

size_t HarnessChecker::idle_count() {
  std::lock_guard<std::mutex> lock(mutex_);
  return idle_.size();
}

std::unique_ptr<harness::Checker> HarnessChecker::acquire(const Task& task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto entry = idle_.rbegin(); entry != idle_.rend(); ++entry)
      if (entry->first == task.id) {
        auto checker = std::move(entry->second);
        idle_.erase(std::next(entry).base());
        return checker;
      }
  }
  auto parsed = spec::parse_op_spec(task.spec);
  if (!parsed.ok()) throw std::runtime_error("task " + task.id + ": " + spec::describe_errors(parsed.errors));
  std::string error;
  auto checker = harness::Checker::create(shrink_for_checking(parsed.spec, max_check_elements_), options_, error);
  if (!checker) throw std::runtime_error("task " + task.id + ": the op itself fails: " + error);
  return checker;
}

void HarnessChecker::release(const std::string& op, std::unique_ptr<harness::Checker> checker) {
  std::vector<std::unique_ptr<harness::Checker>> closing;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    idle_.emplace_back(op, std::move(checker));
    while (idle_.size() > max_idle_) {
      closing.push_back(std::move(idle_.front().second));
      idle_.pop_front();
    }
  }
  // Closed here, outside the lock: stopping a checker's children takes a moment.
}

harness::CheckResult HarnessChecker::check_full(const Task& task, const std::string& completion) {
  auto checker = acquire(task);
  harness::CheckResult result = checker->check(completion);
  release(task.id, std::move(checker));
  return result;
}

CheckSummary HarnessChecker::check(const Task& task, const std::string& completion) {
  return summarize_check(check_full(task, completion));
}

CheckSummary HarnessChecker::recheck(const Task& task, const std::string& completion, uint64_t secret_seed) {
  auto parsed = spec::parse_op_spec(task.spec);
  if (!parsed.ok()) throw std::runtime_error("task " + task.id + ": " + spec::describe_errors(parsed.errors));
  harness::CheckOptions options = options_;
  options.secret_seed = secret_seed == 0 ? 1 : secret_seed;  // 0 would mean "the worker's seed"
  options.cache = false;
  options.result_store.reset();
  options.time = false;
  std::string error;
  auto checker = harness::Checker::create(shrink_for_checking(parsed.spec, max_check_elements_), options, error);
  if (!checker) throw std::runtime_error("task " + task.id + ": the op itself fails: " + error);
  return summarize_check(checker->check(completion));
}

}  // namespace kforge::train
