// The harness's libtorch translation unit for the reference (its caching allocator is the
// other, steady_allocator.cpp): compiles and runs the reference TorchScript, generates seeded
// inputs and times the eager baseline.
// Test: ctest -R harness_reference.
#include "worker/harness/reference.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/jit/api/compilation_unit.h>
#include <torch/jit.h>
#include <torch/script.h>
#include <torch/version.h>

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <regex>
#include <sstream>

namespace kforge::harness {

using spec::DType;
using spec::DistKind;
using spec::OpSpec;
using spec::ShapeSet;
using spec::dtype_size;

namespace {

// OpenBLAS keeps its own thread pool: at::set_num_threads does not reach it, so a
// matched-thread baseline must set it too. Looked up at run time because libtorch
// links the generic libblas.so.3, which may be netlib (no such symbols) or OpenBLAS.
void openblas_set_threads(int threads) {
  using SetThreads = void (*)(int);
  static auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (set && threads > 0) set(threads);
}

// F.<name> spellings whose libtorch builtin differs or does not exist, with what to write.
const std::map<std::string, std::string>& functional_hints() {
  static const std::map<std::string, std::string> hints = {
      {"normalize", "write x / torch.clamp_min(torch.norm(x, 2, dim, True), eps)"},
      {"cross_entropy", "write torch.nll_loss(torch.log_softmax(x, 1), target) or torch.cross_entropy_loss(x, target)"},
      {"embedding", "write torch.embedding(weight, indices) (note the argument order)"},
      {"dropout", "write torch.dropout(x, p, False) (kforge checks inference, so dropout is identity)"},
      {"batch_norm", "write torch.batch_norm(x, weight, bias, running_mean, running_var, False, 0.1, eps, False)"},
      {"interpolate", "write torch.upsample_nearest2d(x, [h, w]) or torch.upsample_bilinear2d(x, [h, w], False)"},
      {"relu6", "write torch.hardtanh(x, 0.0, 6.0)"},
      {"scaled_dot_product_attention",
       "write torch.softmax(q @ k.transpose(-2, -1) * scale, -1) @ v (libtorch 1.13 has no builtin)"},
      {"pad", "write torch.constant_pad_nd(x, [left, right, top, bottom], value)"},
  };
  return hints;
}

// F. names whose builtin has another name (argument lists match).
const std::map<std::string, std::string>& functional_renames() {
  static const std::map<std::string, std::string> renames = {{"mse_loss", "mse_loss"}};
  return renames;
}

at::ScalarType to_scalar_type(DType dtype) {
  switch (dtype) {
    case DType::float32: return at::kFloat;
    case DType::float16: return at::kHalf;
    case DType::bfloat16: return at::kBFloat16;
    case DType::int32: return at::kInt;
    case DType::int64: return at::kLong;
    case DType::boolean: return at::kBool;
  }
  return at::kFloat;
}

bool from_scalar_type(at::ScalarType type, DType& out) {
  switch (type) {
    case at::kFloat: out = DType::float32; return true;
    case at::kHalf: out = DType::float16; return true;
    case at::kBFloat16: out = DType::bfloat16; return true;
    case at::kInt: out = DType::int32; return true;
    case at::kLong: out = DType::int64; return true;
    case at::kBool: out = DType::boolean; return true;
    default: return false;
  }
}

at::Tensor to_tensor(const HostTensor& host) {
  auto tensor = at::empty(host.shape, at::TensorOptions().dtype(to_scalar_type(host.dtype)));
  std::memcpy(tensor.data_ptr(), host.data.data(), host.data.size());
  return tensor;
}

bool to_host(const at::Tensor& tensor, HostTensor& host, std::string& error) {
  if (!from_scalar_type(tensor.scalar_type(), host.dtype)) {
    error = std::string("output dtype ") + std::string(c10::toString(tensor.scalar_type())) +
            " is not supported (use float32, float16, bfloat16, int32, int64 or bool)";
    return false;
  }
  auto contiguous = tensor.contiguous();
  host.shape = contiguous.sizes().vec();
  host.data.resize(static_cast<size_t>(contiguous.numel()) * dtype_size(host.dtype));
  if (!host.data.empty()) std::memcpy(host.data.data(), contiguous.data_ptr(), host.data.size());
  return true;
}

// TorchScript errors carry a source excerpt; keep the first line and the "line N" one.
std::string summarise_compile_error(const std::string& what) {
  std::istringstream lines(what);
  std::string line, first, where, excerpt;
  while (std::getline(lines, line)) {
    if (first.empty() && !line.empty()) first = line;
    auto pos = line.find(", line ");
    if (where.empty() && pos != std::string::npos) {
      where = "line " + line.substr(pos + 7);
      std::getline(lines, excerpt);
    }
  }
  while (!first.empty() && (first.back() == ':' || first.back() == ' ')) first.pop_back();
  std::string out = where.empty() ? first : where + ": " + first;
  auto trimmed = excerpt.find_first_not_of(" \t");
  if (trimmed != std::string::npos) out += " (in: " + excerpt.substr(trimmed) + ")";
  return out;
}

// Interpreter errors start with a traceback; the useful part is the last "XError: ..."
// line, and the traceback's last "line N" says where.
std::string summarise_runtime_error(const std::string& what) {
  std::istringstream lines(what);
  std::string line, where, message, first;
  while (std::getline(lines, line)) {
    if (first.empty() && !line.empty()) first = line;
    auto at = line.find(", line ");
    if (at != std::string::npos && line.find("File \"") != std::string::npos) {
      where = "line " + line.substr(at + 7);
      where = where.substr(0, where.find(','));
    }
    auto colon = line.find("Error: ");
    if (colon != std::string::npos && line.find(' ') > colon) message = line;
  }
  if (message.empty()) message = first;
  if (!where.empty()) message = where + ": " + message;
  if (message.size() > 600) message = message.substr(0, 600) + "...";
  return message;
}

}  // namespace

NormalizedSource normalize_source(const std::string& source) {
  NormalizedSource result;
  std::istringstream in(source);
  std::string line;
  int line_no = 0;
  static const std::regex import_line(R"(^\s*(import\s+[\w\.]+(\s+as\s+\w+)?|from\s+[\w\.]+\s+import\s+.*)\s*$)");
  // torch.float32 and friends are not values for libtorch's resolver; ScalarType codes are.
  static const std::regex dtype_constant(
      R"((^|[^\w\.])torch\.(uint8|int8|int16|short|int32|int|int64|long|float16|half|float32|float|float64|double|bool|bfloat16)\b(?!\s*\())");
  static const std::map<std::string, int> dtype_codes = {
      {"uint8", 0}, {"int8", 1}, {"int16", 2}, {"short", 2}, {"int32", 3}, {"int", 3}, {"int64", 4}, {"long", 4},
      {"float16", 5}, {"half", 5}, {"float32", 6}, {"float", 6}, {"float64", 7}, {"double", 7}, {"bool", 11},
      {"bfloat16", 15}};
  static const std::regex functional(R"((^|[^\w\.])(torch\.nn\.functional|nn\.functional|F)\.(\w+)\s*\()");
  while (std::getline(in, line)) {
    ++line_no;
    if (std::regex_match(line, import_line)) {
      result.rewrites.push_back("line " + std::to_string(line_no) + ": removed '" + line + "'");
      result.source += "\n";
      continue;
    }
    std::string out;
    auto begin = std::sregex_iterator(line.begin(), line.end(), functional);
    size_t last = 0;
    for (auto it = begin; it != std::sregex_iterator(); ++it) {
      const auto& m = *it;
      std::string name = m[3].str();
      auto hint = functional_hints().find(name);
      if (hint != functional_hints().end() && result.error.empty()) {
        result.error = "line " + std::to_string(line_no) + ": " + m[2].str() + "." + name +
                       " has no libtorch builtin; " + hint->second;
      }
      auto rename = functional_renames().find(name);
      std::string target = rename == functional_renames().end() ? name : rename->second;
      out += line.substr(last, static_cast<size_t>(m.position(0)) - last);
      out += m[1].str() + "torch." + target + "(";
      result.rewrites.push_back("line " + std::to_string(line_no) + ": " + m[2].str() + "." + name + " -> torch." +
                                target);
      last = static_cast<size_t>(m.position(0) + m.length(0));
    }
    out += line.substr(last);
    std::string with_codes;
    last = 0;
    for (auto it = std::sregex_iterator(out.begin(), out.end(), dtype_constant); it != std::sregex_iterator(); ++it) {
      const auto& m = *it;
      with_codes += out.substr(last, static_cast<size_t>(m.position(0)) - last);
      with_codes += m[1].str() + std::to_string(dtype_codes.at(m[2].str()));
      last = static_cast<size_t>(m.position(0) + m.length(0));
    }
    with_codes += out.substr(last);
    result.source += with_codes + "\n";
  }
  return result;
}

struct Reference::Impl {
  std::shared_ptr<torch::jit::CompilationUnit> unit;
  torch::jit::Function* forward = nullptr;
};

Reference::Reference() : impl_(std::make_unique<Impl>()) {}
Reference::~Reference() = default;

std::unique_ptr<Reference> Reference::compile(const OpSpec& spec, std::string& error) {
  auto normalized = normalize_source(spec.source);
  if (!normalized.error.empty()) {
    error = normalized.error;
    return nullptr;
  }
  std::unique_ptr<Reference> ref(new Reference());
  try {
    ref->impl_->unit = torch::jit::compile(normalized.source);
  } catch (const std::exception& e) {
    error = summarise_compile_error(e.what());
    // A rewritten F.x that libtorch does not know: say what the user wrote and what works.
    static const std::regex unknown_builtin(R"(aten::(\w+))");
    std::smatch m;
    std::string what = e.what();
    if (what.find("nknown builtin op") != std::string::npos && std::regex_search(what, m, unknown_builtin)) {
      for (const auto& rewrite : normalized.rewrites) {
        if (rewrite.find("-> torch." + m[1].str()) != std::string::npos) {
          error += "; " + rewrite.substr(0, rewrite.find(" ->")) +
                   " has no libtorch builtin: use a torch.<op> builtin (torch.relu, torch.softmax(x, dim), "
                   "torch.layer_norm...) or write it with tensor operations";
        }
      }
    }
    return nullptr;
  }
  if (!ref->impl_->unit->find_function("forward")) {
    error = "source defines no function 'forward' (write: def forward(x: Tensor) -> Tensor: ...)";
    return nullptr;
  }
  ref->impl_->forward = &ref->impl_->unit->get_function("forward");
  size_t params = ref->impl_->forward->getSchema().arguments().size();
  if (params != spec.inputs.size()) {
    error = "forward() takes " + std::to_string(params) + " arguments but the op declares " +
            std::to_string(spec.inputs.size()) + " inputs (they are passed in the order of \"inputs\")";
    return nullptr;
  }
  return ref;
}

size_t Reference::arity() const { return impl_->forward->getSchema().arguments().size(); }

namespace {

// forward()'s result as tensors: a Tensor, a tuple of Tensors or a list; "" or the error.
std::string collect_outputs(const c10::IValue& value, std::vector<at::Tensor>& tensors) {
  if (value.isTensor()) {
    tensors.push_back(value.toTensor());
  } else if (value.isTuple()) {
    for (const auto& element : value.toTupleRef().elements()) {
      if (!element.isTensor()) return "forward() returned a tuple with a non-tensor element (" + element.tagKind() + ")";
      tensors.push_back(element.toTensor());
    }
  } else if (value.isTensorList()) {
    for (const auto& t : value.toTensorVector()) tensors.push_back(t);
  } else {
    return "forward() must return a Tensor or a tuple of Tensors, got " + value.tagKind();
  }
  return tensors.empty() ? "forward() returned no tensors" : "";
}

}  // namespace

ReferenceRun Reference::run(const std::vector<HostTensor>& inputs) const {
  ReferenceRun result;
  try {
    std::vector<c10::IValue> stack;
    for (const auto& input : inputs) stack.emplace_back(to_tensor(input));
    c10::InferenceMode guard;
    std::vector<at::Tensor> tensors;
    result.error = collect_outputs((*impl_->forward)(stack), tensors);
    if (!result.error.empty()) return result;
    for (const auto& tensor : tensors) {
      HostTensor host;
      if (!to_host(tensor, host, result.error)) return result;
      result.outputs.push_back(std::move(host));
    }
  } catch (const std::exception& e) {
    std::string what = e.what();
    result.out_of_memory = what.find("can't allocate memory") != std::string::npos ||
                           what.find("std::bad_alloc") != std::string::npos;
    result.error = summarise_runtime_error(what);
    result.outputs.clear();
  }
  return result;
}

ReferenceRun Reference::output_shapes(const OpSpec& spec, const ShapeSet& shapes) const {
  ReferenceRun result;
  try {
    std::vector<c10::IValue> stack;
    for (const auto& input : spec.inputs) {
      auto shape = shapes.count(input.name) ? shapes.at(input.name) : input.shape;
      stack.emplace_back(at::empty(shape, at::TensorOptions().dtype(to_scalar_type(input.dtype)).device(at::kMeta)));
    }
    c10::InferenceMode guard;
    std::vector<at::Tensor> tensors;
    result.error = collect_outputs((*impl_->forward)(stack), tensors);
    if (!result.error.empty()) return result;
    for (const auto& tensor : tensors) {
      HostTensor host;  // shape and dtype only: a meta tensor has no data
      if (!from_scalar_type(tensor.scalar_type(), host.dtype)) {
        result.error = std::string("output dtype ") + std::string(c10::toString(tensor.scalar_type())) + " is not supported";
        return result;
      }
      host.shape = tensor.sizes().vec();
      result.outputs.push_back(std::move(host));
    }
  } catch (const std::exception& e) {
    result.error = summarise_runtime_error(e.what());
    result.outputs.clear();
  }
  return result;
}

Reference::Timing Reference::time_forward(const std::vector<std::vector<HostTensor>>& rotations, int threads,
                                          const TimingProtocol& protocol, BaselineAllocator allocator) const {
  Timing timing;
  if (rotations.empty()) {
    timing.error = "no inputs to time";
    return timing;
  }
  int saved_threads = at::get_num_threads();
  int saved_blas_threads = blas_threads();
  if (threads > 0) at::set_num_threads(threads);
  openblas_set_threads(threads);
  try {
    std::vector<std::vector<c10::IValue>> stacks;
    for (const auto& inputs : rotations) {
      std::vector<c10::IValue> stack;
      for (const auto& input : inputs) stack.emplace_back(to_tensor(input));
      stacks.push_back(std::move(stack));
    }
    c10::InferenceMode guard;
    // The inputs above come from the default allocator; what forward() allocates (outputs,
    // intermediates) comes from the caching one, as in a process that has run the op before.
    std::optional<SteadyAllocatorScope> steady;
    if (allocator == BaselineAllocator::caching) {
      steady.emplace();
      timing.caching_allocator = steady->installed();
    }
    using clock = std::chrono::steady_clock;
    auto run = [&](int run_idx) {
      auto stack = stacks[static_cast<size_t>(run_idx) % stacks.size()];
      auto t0 = clock::now();
      c10::IValue out = (*impl_->forward)(stack);
      TimingSample sample;
      sample.wall_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
      return sample;
    };
    TimingProtocol eager = protocol;
    eager.touch_runs = std::max<int>(protocol.touch_runs, static_cast<int>(stacks.size()));
    timing.record = run_timing_protocol(run, eager, std::max<int>(3, static_cast<int>(stacks.size())));
    timing.median_ms = timing.record.median_ms;
    timing.min_ms = timing.record.min_ms;
    timing.iqr_ms = timing.record.iqr_ms;
    timing.runs = timing.record.runs;
  } catch (const std::exception& e) {
    timing.error = std::string(e.what()).substr(0, 600);
  }
  if (threads > 0) at::set_num_threads(saved_threads);
  openblas_set_threads(saved_blas_threads);
  return timing;
}

Reference::Timing Reference::time_forward(const std::vector<std::vector<HostTensor>>& rotations, int threads,
                                          double max_seconds, double target_iqr_fraction) const {
  TimingProtocol protocol;
  protocol.max_seconds = max_seconds;
  protocol.target_iqr = target_iqr_fraction;
  return time_forward(rotations, threads, protocol);
}

std::vector<HostTensor> make_inputs(const OpSpec& spec, const ShapeSet& shapes, uint64_t seed) {
  auto generator = at::detail::createCPUGenerator(seed);
  std::vector<HostTensor> inputs;
  for (const auto& input : spec.inputs) {
    auto found = shapes.find(input.name);
    const auto& shape = found == shapes.end() ? input.shape : found->second;
    at::Tensor t;
    // Draw in float32/int64, then cast: the same seed gives the same values for every dtype.
    switch (input.dist.kind) {
      case DistKind::normal:
        t = at::normal(input.dist.a, input.dist.b, shape, generator, at::TensorOptions().dtype(at::kFloat));
        break;
      case DistKind::uniform:
        t = at::empty(shape, at::kFloat).uniform_(input.dist.a, input.dist.b, generator);
        break;
      case DistKind::randint:
        t = at::randint(static_cast<int64_t>(input.dist.a), static_cast<int64_t>(input.dist.b), shape, generator,
                        at::TensorOptions().dtype(at::kLong));
        break;
      case DistKind::ones: t = at::ones(shape, at::kFloat); break;
      case DistKind::zeros: t = at::zeros(shape, at::kFloat); break;
    }
    HostTensor host;
    std::string error;
    to_host(t.to(to_scalar_type(input.dtype)), host, error);
    inputs.push_back(std::move(host));
  }
  return inputs;
}

std::string torch_version_string() { return TORCH_VERSION; }
int torch_threads() { return at::get_num_threads(); }
void torch_set_threads(int threads) {
  at::set_num_threads(threads);
  openblas_set_threads(threads);
}

int blas_threads() {
  using GetThreads = int (*)();
  static auto get = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  return get ? get() : 0;
}

std::string blas_description() {
  using GetConfig = char* (*)();
  static auto config = reinterpret_cast<GetConfig>(dlsym(RTLD_DEFAULT, "openblas_get_config"));
  if (!config) return "not OpenBLAS (Debian's default libblas.so.3 is the netlib reference BLAS)";
  return config();
}

}  // namespace kforge::harness
