// Static rules and launch planning (see rules.h and docs/kernel-format.md for the
// rule names). Test: ctest -R 'harness_(adversarial|cl_backend)'.
#include "worker/harness/rules.h"

#include <nlohmann/json.hpp>

#include <map>
#include <regex>
#include <set>

namespace kforge::harness {

using spec::InputSpec;
using spec::ShapeSet;
using spec::dtype_size;
using spec::shape_numel;
using spec::shape_to_string;

namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out.empty() ? "(none)" : out;
}

std::string describe_shapes(const ShapeSet& shapes) {
  std::string out;
  for (const auto& [name, shape] : shapes) out += (out.empty() ? "" : " ") + name + "=" + shape_to_string(shape);
  return out;
}

std::optional<RuleViolation> violation(const std::string& rule, const std::string& message) {
  return RuleViolation{rule, message};
}

// The scalar C type of a non-pointer parameter, reduced to the kind the harness passes.
std::optional<PlanArg::Kind> scalar_kind(const std::string& type) {
  static const std::regex words(R"(\b(const|__private|private|unsigned|signed)\b)");
  std::string bare = std::regex_replace(type, words, " ");
  bare.erase(0, bare.find_first_not_of(" \t\r\n"));
  bare.erase(bare.find_last_not_of(" \t\r\n") + 1);
  bool is_unsigned = type.find("unsigned") != std::string::npos;
  if (bare == "int" || bare == "uint" || bare == "int32_t" || bare == "uint32_t" || (is_unsigned && bare.empty()))
    return PlanArg::Kind::i32;
  if (bare == "long" || bare == "ulong" || bare == "size_t" || bare == "long long" || bare == "int64_t" ||
      bare == "uint64_t")
    return PlanArg::Kind::i64;
  if (bare == "float") return PlanArg::Kind::f32;
  if (bare == "double") return PlanArg::Kind::f64;
  return std::nullopt;
}

int pointee_size(const std::string& type) {
  static const std::vector<std::pair<std::string, int>> sizes = {
      {"double", 8}, {"ulong", 8}, {"long", 8}, {"int64_t", 8}, {"uint64_t", 8}, {"float", 4}, {"uint", 4},
      {"int", 4},    {"int32_t", 4}, {"uint32_t", 4}, {"half", 2}, {"__half", 2}, {"__nv_bfloat16", 2},
      {"ushort", 2}, {"short", 2}, {"uchar", 1}, {"char", 1}, {"bool", 1}};
  for (const auto& [name, size] : sizes)
    if (std::regex_search(type, std::regex("\\b" + name + "\\b"))) return size;
  return 1;
}

const KernelDecl* find_kernel(const KernelProgram& program, const std::string& name) {
  for (const auto& kernel : program.kernels)
    if (kernel.name == name) return &kernel;
  return nullptr;
}

}  // namespace

std::optional<RuleViolation> check_static_rules(const KernelProgram& program, const BufferNames& names,
                                                const ProgramLimits& limits) {
  if (program.source.size() > limits.max_source_bytes)
    return violation("program_too_large", "the source is " + std::to_string(program.source.size()) +
                                              " bytes; the limit is " + std::to_string(limits.max_source_bytes));
  if (program.launches.size() > limits.max_launches)
    return violation("program_too_large", std::to_string(program.launches.size()) + " launches; the limit is " +
                                              std::to_string(limits.max_launches));
  if (program.kernels.size() > limits.max_kernels)
    return violation("program_too_large", std::to_string(program.kernels.size()) + " kernels; the limit is " +
                                              std::to_string(limits.max_kernels));
  if (program.scratch.size() > limits.max_scratch_buffers)
    return violation("program_too_large", std::to_string(program.scratch.size()) + " scratch buffers; the limit is " +
                                              std::to_string(limits.max_scratch_buffers));
  if (program.kernels.empty())
    return violation("no_kernel", "the source declares no kernel; write e.g. "
                                  "'__kernel void my_kernel(__global const float* x, __global float* out, int n)' "
                                  "(opencl) or 'extern \"C\" __global__ void my_kernel(const float* x, float* out, "
                                  "int n)' (cuda)");

  static const std::regex printf_call(R"(\bprintf\s*\()"),
      include_line(R"(#\s*(include|include_next|import|embed)\b|__has_include)"), asm_use(R"(\b(asm|__asm__|__asm)\b)"),
      token_paste(R"(##)");
  // Checked on the source as written and as the lexer sees it (trigraphs, %: digraphs and
  // line splices resolved), so a spelling the compiler joins cannot hide a banned word.
  for (const std::string* view : {&program.code_without_comments, &program.code_as_lexed}) {
    const std::string& code = *view;
    if (std::regex_search(code, printf_call))
      return violation("forbidden_construct", "printf is not allowed in kernels (output goes through buffers only)");
    if (std::regex_search(code, include_line))
      return violation("forbidden_construct", "#include (or #import, __has_include) is not allowed; the program must be "
                                              "self-contained");
    if (std::regex_search(code, asm_use)) return violation("forbidden_construct", "inline assembly is not allowed");
    // Pasting forms identifiers no rule sees (CAT(__as, m__) is __asm__).
    if (std::regex_search(code, token_paste))
      return violation("forbidden_construct", "token pasting (##) is not allowed: write names out");
  }
  {
    // A splice inside a name has no use but hiding the name (one between statements or
    // ending a macro line is fine); trigraphs have none at all.
    static const std::regex split_name(R"([A-Za-z0-9_]\\[ \t\r]*\n[A-Za-z0-9_])"),
        trigraph(R"(\?\?[=/'()!<>\-])");
    if (std::regex_search(program.code_without_comments, split_name))
      return violation("forbidden_construct", "a line splice (backslash-newline) inside a name is not allowed");
    if (std::regex_search(program.code_without_comments, trigraph))
      return violation("forbidden_construct", "trigraphs (??=, ??/ ...) are not allowed");
  }
  const std::string& code = program.code_without_comments;
  if (program.dialect == Dialect::cuda) {
    // Clocks and sleeps let a kernel notice it is being timed; device malloc, traps and
    // breakpoints reach past the kernel's buffers.
    static const std::regex cuda_banned(R"(\b(clock|clock64|__nanosleep|__globaltimer|globaltimer|malloc|free|__trap|__brkpt|cudaMalloc|cudaMemcpy\w*|cudaDeviceSynchronize)\s*\()");
    std::smatch m;
    if (std::regex_search(code, m, cuda_banned) || std::regex_search(program.code_as_lexed, m, cuda_banned))
      return violation("forbidden_construct", m[1].str() + "() is not allowed in a cuda kernel (no clocks, sleeps, "
                                                           "device allocation or host calls)");
  }

  // Every buffer a program may name, and which of them are inputs.
  std::set<std::string> inputs(names.inputs.begin(), names.inputs.end());
  std::set<std::string> outputs;
  for (size_t out_idx = 0; out_idx < names.output_count; ++out_idx) outputs.insert("out" + std::to_string(out_idx));
  if (names.output_count == 1) outputs.insert("out");
  std::set<std::string> scratch;
  for (const auto& decl : program.scratch) {
    if (inputs.count(decl.name) || outputs.count(decl.name) || !scratch.insert(decl.name).second)
      return violation("scratch_name_clash", "line " + std::to_string(decl.line) + ": scratch buffer '" + decl.name +
                                                 "' reuses the name of an input, an output or another scratch buffer");
  }
  auto sized_names_ok = [&](const SizeExprPtr& expr, int line) -> std::optional<RuleViolation> {
    std::vector<std::string> used;
    expr->names(used);
    for (const auto& name : used)
      if (!inputs.count(name) && !outputs.count(name))
        return violation("unknown_buffer", "line " + std::to_string(line) + ": size expression names '" + name +
                                               "', which is not an input or output (inputs: " +
                                               join(names.inputs) + "; outputs: " +
                                               join({outputs.begin(), outputs.end()}) + ")");
    return std::nullopt;
  };
  for (const auto& decl : program.scratch)
    if (auto v = sized_names_ok(decl.count, decl.line)) return v;

  std::set<std::string> launched, written_outputs;
  std::set<std::string> input_params, other_params;  // parameter names bound to inputs / to anything else
  for (const auto& launch : program.launches) {
    const std::string where = "line " + std::to_string(launch.line) + ": ";
    const KernelDecl* kernel = find_kernel(program, launch.kernel);
    if (!kernel) {
      std::vector<std::string> declared;
      for (const auto& k : program.kernels) declared.push_back(k.name);
      return violation("unknown_kernel", where + "launch of '" + launch.kernel +
                                             "', but the source declares no such __kernel (declared: " +
                                             join(declared) + ")");
    }
    launched.insert(launch.kernel);
    if (launch.args.size() != kernel->params.size())
      return violation("arg_count_mismatch", where + "'" + launch.kernel + "' takes " +
                                                 std::to_string(kernel->params.size()) + " parameters (line " +
                                                 std::to_string(kernel->line) + ") but args= gives " +
                                                 std::to_string(launch.args.size()));
    for (const auto& dim : launch.grid)
      if (auto v = sized_names_ok(dim, launch.line)) return v;
    for (const auto& dim : launch.block)
      if (auto v = sized_names_ok(dim, launch.line)) return v;
    for (size_t arg_idx = 0; arg_idx < launch.args.size(); ++arg_idx) {
      const auto& arg = launch.args[arg_idx];
      const auto& param = kernel->params[arg_idx];
      const std::string which = where + "argument " + std::to_string(arg_idx + 1) + " ('" + arg.text + "' -> " +
                                param.type + " " + param.name + ")";
      if (param.is_local)
        return violation("arg_kind_mismatch", which + ": __local pointer parameters are not supported; declare a "
                                                      "__local array inside the kernel instead");
      if (arg.kind == LaunchArg::Kind::buffer) {
        if (!inputs.count(arg.name) && !outputs.count(arg.name) && !scratch.count(arg.name))
          return violation("unknown_buffer", which + ": no buffer named '" + arg.name + "' (inputs: " +
                                                 join(names.inputs) + "; outputs: " +
                                                 join({outputs.begin(), outputs.end()}) + "; scratch: " +
                                                 join({scratch.begin(), scratch.end()}) + ")");
        if (!param.is_pointer)
          return violation("arg_kind_mismatch", which + ": a buffer passed to a scalar parameter");
        if (outputs.count(arg.name) && !param.is_const) {
          written_outputs.insert(arg.name == "out" ? "out0" : arg.name);
          if (arg.name == "out0") written_outputs.insert("out");
          if (arg.name == "out") written_outputs.insert("out");
        }
        (inputs.count(arg.name) ? input_params : other_params).insert(param.name);
      } else {
        if (param.is_pointer)
          return violation("arg_kind_mismatch", which + ": a number passed to a pointer parameter");
        if (arg.kind == LaunchArg::Kind::integer)
          if (auto v = sized_names_ok(arg.expr, launch.line)) return v;
        auto kind = scalar_kind(param.type);
        if (!kind)
          return violation("arg_kind_mismatch", which + ": scalar parameters must be int, uint, long, ulong, "
                                                        "size_t, float or double, not '" + param.type + "'");
        if (arg.kind == LaunchArg::Kind::real && (*kind == PlanArg::Kind::i32 || *kind == PlanArg::Kind::i64))
          return violation("arg_kind_mismatch", which + ": a real constant passed to an integer parameter");
      }
    }
  }
  for (const auto& kernel : program.kernels)
    if (!launched.count(kernel.name))
      return violation("kernel_not_launched", "kernel '" + kernel.name + "' (line " + std::to_string(kernel.line) +
                                                  ") is declared but never launched; launch it or remove it");
  for (size_t out_idx = 0; out_idx < names.output_count; ++out_idx) {
    std::string name = "out" + std::to_string(out_idx);
    if (!written_outputs.count(name))
      return violation("output_not_written",
                       "output '" + (names.output_count == 1 ? std::string("out") : name) +
                           "' is never passed to a writable parameter (__global T*, not const) of any launch");
  }
  // Atomics on an input would mutate it; inputs are read-only.
  static const std::regex atomic_call(R"(\b(atomic_\w+|atom_\w+)\s*\(\s*([^,;)]*))");
  for (auto it = std::sregex_iterator(code.begin(), code.end(), atomic_call); it != std::sregex_iterator(); ++it) {
    std::string target = (*it)[2].str();
    static const std::regex ident(R"(\b([A-Za-z_]\w*)\b)");
    for (auto id = std::sregex_iterator(target.begin(), target.end(), ident); id != std::sregex_iterator(); ++id) {
      std::string name = (*id)[1].str();
      if (input_params.count(name) && !other_params.count(name))
        return violation("forbidden_construct", (*it)[1].str() + " on '" + name +
                                                    "', which is an input: inputs are read-only");
    }
  }
  return std::nullopt;
}

std::optional<RuleViolation> make_launch_plan(const KernelProgram& program, const std::vector<InputSpec>& inputs,
                                              const ShapeSet& input_shapes, const std::vector<PlanOutput>& outputs,
                                              const ProgramLimits& limits, LaunchPlan& plan) {
  plan = LaunchPlan{};
  std::map<std::string, std::vector<int64_t>> shapes;
  std::map<std::string, int> buffer_index;
  for (size_t input_idx = 0; input_idx < inputs.size(); ++input_idx) {
    const auto& input = inputs[input_idx];
    auto found = input_shapes.find(input.name);
    const auto& shape = found == input_shapes.end() ? input.shape : found->second;
    shapes[input.name] = shape;
    buffer_index[input.name] = static_cast<int>(plan.buffers.size());
    plan.buffers.push_back({input.name, PlanBuffer::Role::input, static_cast<int>(input_idx),
                            shape_numel(shape) * dtype_size(input.dtype)});
  }
  for (size_t out_idx = 0; out_idx < outputs.size(); ++out_idx) {
    std::string name = "out" + std::to_string(out_idx);
    shapes[name] = outputs[out_idx].shape;
    if (outputs.size() == 1) shapes["out"] = outputs[out_idx].shape;
    buffer_index[name] = static_cast<int>(plan.buffers.size());
    if (outputs.size() == 1) buffer_index["out"] = buffer_index[name];
    plan.buffers.push_back({name, PlanBuffer::Role::output, static_cast<int>(out_idx),
                            shape_numel(outputs[out_idx].shape) * dtype_size(outputs[out_idx].dtype)});
  }
  ShapeSet all_shapes(shapes.begin(), shapes.end());
  const std::string for_shapes = " for shapes " + describe_shapes(input_shapes);
  auto eval = [&](const SizeExprPtr& expr, int line, const std::string& what, int64_t& value) -> std::optional<RuleViolation> {
    std::string error;
    auto result = expr->eval(shapes, error);
    if (!result)
      return violation("bad_size_expression", "line " + std::to_string(line) + ": " + what + ": " + error + for_shapes);
    value = *result;
    return std::nullopt;
  };
  int64_t scratch_total = 0;
  for (size_t scratch_idx = 0; scratch_idx < program.scratch.size(); ++scratch_idx) {
    const auto& decl = program.scratch[scratch_idx];
    int64_t count = 0;
    if (auto v = eval(decl.count, decl.line, "scratch '" + decl.name + "' size", count)) return v;
    if (count < 1)
      return violation("bad_size_expression", "line " + std::to_string(decl.line) + ": scratch '" + decl.name +
                                                  "' has " + std::to_string(count) + " elements" + for_shapes);
    if (count > limits.max_scratch_bytes / decl.element_size ||
        scratch_total + count * decl.element_size > limits.max_scratch_bytes)
      return violation("program_too_large", "line " + std::to_string(decl.line) + ": scratch buffers need more than " +
                                                std::to_string(limits.max_scratch_bytes >> 20) + " MiB" + for_shapes);
    scratch_total += count * decl.element_size;
    buffer_index[decl.name] = static_cast<int>(plan.buffers.size());
    plan.buffers.push_back({decl.name, PlanBuffer::Role::scratch, static_cast<int>(scratch_idx),
                            count * decl.element_size});
  }
  for (const auto& launch : program.launches) {
    const KernelDecl* kernel = find_kernel(program, launch.kernel);
    if (!kernel) return violation("unknown_kernel", "launch of undeclared kernel '" + launch.kernel + "'");
    PlanLaunch planned;
    planned.kernel = launch.kernel;
    planned.line = launch.line;
    planned.dims = static_cast<int>(launch.grid.size());
    int64_t items = 1, block_items = 1;
    for (int dim = 0; dim < planned.dims; ++dim) {
      int64_t groups = 0, block = 0;
      if (auto v = eval(launch.grid[dim], launch.line, "grid[" + std::to_string(dim) + "]", groups)) return v;
      if (auto v = eval(launch.block[dim], launch.line, "block[" + std::to_string(dim) + "]", block)) return v;
      if (groups < 1 || block < 1)
        return violation("bad_size_expression", "line " + std::to_string(launch.line) + ": grid[" +
                                                    std::to_string(dim) + "]=" + std::to_string(groups) + ", block[" +
                                                    std::to_string(dim) + "]=" + std::to_string(block) +
                                                    " (both must be >= 1)" + for_shapes);
      if (groups > limits.max_work_items / block || items > limits.max_work_items / (groups * block))
        return violation("launch_too_large", "line " + std::to_string(launch.line) + ": more than " +
                                                 std::to_string(limits.max_work_items) + " work-items" + for_shapes);
      planned.local[dim] = block;
      planned.global[dim] = groups * block;
      items *= groups * block;
      block_items *= block;
    }
    if (block_items > limits.max_block)
      return violation("launch_too_large", "line " + std::to_string(launch.line) + ": block has " +
                                               std::to_string(block_items) + " work-items; the device allows " +
                                               std::to_string(limits.max_block));
    for (size_t arg_idx = 0; arg_idx < launch.args.size() && arg_idx < kernel->params.size(); ++arg_idx) {
      const auto& arg = launch.args[arg_idx];
      const auto& param = kernel->params[arg_idx];
      PlanArg planned_arg;
      if (arg.kind == LaunchArg::Kind::buffer) {
        auto found = buffer_index.find(arg.name);
        if (found == buffer_index.end()) return violation("unknown_buffer", "no buffer named '" + arg.name + "'");
        planned_arg.buffer = found->second;
        // A constant index visibly past the end of the buffer bound to this parameter.
        int64_t elements = plan.buffers[found->second].bytes / pointee_size(param.type);
        std::string body = program.code_without_comments.substr(kernel->body_begin, kernel->body_end - kernel->body_begin);
        std::regex indexed("\\b" + param.name + R"(\s*\[\s*(\d{1,15})\s*\])");
        for (auto it = std::sregex_iterator(body.begin(), body.end(), indexed); it != std::sregex_iterator(); ++it) {
          int64_t index = std::stoll((*it)[1].str());
          if (index >= elements)
            return violation("static_out_of_bounds", "kernel '" + kernel->name + "' accesses " + param.name + "[" +
                                                         std::to_string(index) + "], but '" + arg.name + "' has " +
                                                         std::to_string(elements) + " elements" + for_shapes);
        }
      } else {
        auto kind = scalar_kind(param.type).value_or(PlanArg::Kind::i32);
        planned_arg.kind = kind;
        if (arg.kind == LaunchArg::Kind::real) {
          planned_arg.real = arg.real;
        } else {
          int64_t value = 0;
          if (auto v = eval(arg.expr, launch.line, "argument '" + arg.text + "'", value)) return v;
          planned_arg.integer = value;
          planned_arg.real = static_cast<double>(value);
          bool is_unsigned = param.type.find("uint") != std::string::npos || param.type.find("unsigned") != std::string::npos;
          if (kind == PlanArg::Kind::i32 &&
              (value > (is_unsigned ? int64_t{4294967295} : int64_t{2147483647}) ||
               value < (is_unsigned ? 0 : int64_t{-2147483648})))
            return violation("bad_size_expression", "line " + std::to_string(launch.line) + ": argument '" + arg.text +
                                                        "' = " + std::to_string(value) + " does not fit in " +
                                                        param.type + " (use long)" + for_shapes);
        }
      }
      planned.args.push_back(planned_arg);
    }
    plan.launches.push_back(planned);
  }
  return std::nullopt;
}

std::string launch_plan_to_json(const LaunchPlan& plan) {
  nlohmann::json root;
  root["buffers"] = nlohmann::json::array();
  for (const auto& buffer : plan.buffers)
    root["buffers"].push_back({{"name", buffer.name}, {"role", static_cast<int>(buffer.role)},
                               {"index", buffer.index}, {"bytes", buffer.bytes}});
  root["launches"] = nlohmann::json::array();
  for (const auto& launch : plan.launches) {
    nlohmann::json args = nlohmann::json::array();
    for (const auto& arg : launch.args)
      args.push_back({{"kind", static_cast<int>(arg.kind)}, {"buffer", arg.buffer}, {"integer", arg.integer},
                      {"real", arg.real}});
    root["launches"].push_back({{"kernel", launch.kernel}, {"line", launch.line}, {"dims", launch.dims},
                                {"global", {launch.global[0], launch.global[1], launch.global[2]}},
                                {"local", {launch.local[0], launch.local[1], launch.local[2]}}, {"args", args}});
  }
  return root.dump();
}

bool launch_plan_from_json(const std::string& text, LaunchPlan& plan, std::string& error) {
  try {
    auto root = nlohmann::json::parse(text);
    plan = LaunchPlan{};
    for (const auto& b : root.at("buffers"))
      plan.buffers.push_back({b.at("name").get<std::string>(), static_cast<PlanBuffer::Role>(b.at("role").get<int>()),
                              b.at("index").get<int>(), b.at("bytes").get<int64_t>()});
    for (const auto& l : root.at("launches")) {
      PlanLaunch launch;
      launch.kernel = l.at("kernel").get<std::string>();
      launch.line = l.at("line").get<int>();
      launch.dims = l.at("dims").get<int>();
      for (int dim = 0; dim < 3; ++dim) {
        launch.global[dim] = l.at("global")[dim].get<int64_t>();
        launch.local[dim] = l.at("local")[dim].get<int64_t>();
      }
      for (const auto& a : l.at("args"))
        launch.args.push_back({static_cast<PlanArg::Kind>(a.at("kind").get<int>()), a.at("buffer").get<int>(),
                               a.at("integer").get<int64_t>(), a.at("real").get<double>()});
      plan.launches.push_back(launch);
    }
    return true;
  } catch (const std::exception& e) {
    error = std::string("invalid launch plan: ") + e.what();
    return false;
  }
}

}  // namespace kforge::harness
