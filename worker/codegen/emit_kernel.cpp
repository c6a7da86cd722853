// Kernel (parameters, launch line, text) and the text helpers every stage emitter
// shares, behind emit_program.h. Test: ctest -R codegen.
#include <algorithm>
#include <set>
#include <sstream>

#include "worker/codegen/emit_program.h"

namespace kforge::codegen::emit {
namespace {

// Identifiers the generated kernels use themselves; an input with one of these
// names gets a different parameter name (launch args are positional).
const std::set<std::string> kReserved = {
    "i", "j", "n", "kk", "k0", "m", "m0", "lx", "ly", "lid", "gid", "row", "col", "bat", "base", "len", "inner",
    "groups", "acc", "red", "tile_a", "tile_b", "M", "N", "K", "stride", "step", "out", "wr", "tr",
    "ri", "am", "ak", "bk", "bn", "bv", "av", "sum", "kt", "c", "n0", "r", "k", "c0", "c1", "c2", "c3", "c4", "c5", "kernel", "global", "local", "constant", "private",
    "float", "int", "half", "double", "long", "char", "short", "uint", "bool", "void",
    // CUDA C++ keywords and builtins an input could be named after
    "new", "delete", "class", "template", "this", "auto", "register", "namespace", "operator", "friend", "virtual",
    "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "q0", "lane", "warp", "o",
    // window kernels (emit_window.cpp), besides the numbered xoffN, woffN, kdN, ixN, tN
    "ci", "grp", "cog", "cnt", "xv",
    // blocked row sums (emit_reduce.cpp)
    "rb", "rend", "part",
    // register-tiled matmuls (emit_matmul.cpp)
    "As", "Bs", "tid", "tx", "ty", "ld", "el", "mm", "nn", "a_reg", "b_reg", "a_vec0", "a_vec1", "b_vec0", "b_vec1",
    "pa", "pb", "buf", "kn", "more",
    // tensor-core matmuls (emit_matmul.cpp)
    "wm0", "wn0", "ks", "e", "t", "at", "bt", "a_hi", "a_lo", "b_hi", "b_lo", "a_at", "b_at", "c_at", "fa", "fb", "fc",
    "a_tile", "b_tile", "vec_a", "vec_b", "run"};

// xoff0, kd1, t2...: the window loops' numbered locals.
bool window_local(const std::string& name) {
  for (const char* prefix : {"xoff", "woff", "kd", "ix", "t"}) {
    const std::string p = prefix;
    if (name.size() > p.size() && name.compare(0, p.size(), p) == 0 &&
        name.find_first_not_of("0123456789", p.size()) == std::string::npos)
      return true;
  }
  return false;
}

}  // namespace

std::string Kernel::buffer(const std::string& name, const std::string& type) {
  auto it = buffer_param.find(name);
  if (it != buffer_param.end()) return it->second;
  bool var_like = name.size() > 1 && name[0] == 'v' &&
                  name.find_first_not_of("0123456789", 1) == std::string::npos;  // v0, v1... are values
  bool acc_like = name.rfind("acc", 0) == 0;
  std::string param = kReserved.count(name) || var_like || acc_like || window_local(name) ? "in_" + name : name;
  buffer_param[name] = param;
  params.push_back(target == Target::cuda ? "const " + type + "* __restrict__ " + param
                                          : "__global const " + type + "* restrict " + param);
  args.push_back(name);
  return param;
}

std::string Kernel::size(const std::string& expr, const std::string& preferred) {
  bool literal = std::all_of(expr.begin(), expr.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (literal) return expr;
  auto it = size_param.find(expr);
  if (it != size_param.end()) return it->second;
  std::string name = preferred;
  for (int suffix = 2; std::find(size_params.begin(), size_params.end(), name) != size_params.end(); ++suffix)
    name = preferred + std::to_string(suffix);
  size_param[expr] = name;
  size_params.push_back(name);
  size_args.push_back(expr);
  return name;
}

std::string Kernel::dim(const Dim& d) {
  if (!d.formula.empty()) return size(d.formula, d.name.empty() ? "size_sum" : d.name);
  if (d.axis < 0) return std::to_string(d.value);
  return size(d.expr(), d.input + "_size" + std::to_string(d.axis));
}

std::string Kernel::render() const {
  std::ostringstream out;
  std::string all_args;
  std::vector<std::string> all_params = params;
  std::vector<std::string> launch = args;
  const bool cuda = target == Target::cuda;
  // CUDA's 64-bit integer is `long long` (`long` is 32-bit on some hosts).
  const std::string out_type = cuda && output_type == "long" ? "long long" : output_type;
  all_params.push_back(cuda ? out_type + "* __restrict__ " + output_buffer
                            : "__global " + output_type + "* restrict " + output_buffer);
  launch.push_back(output_buffer);
  for (size_t idx = 0; idx < size_params.size(); ++idx) {
    all_params.push_back("int " + size_params[idx]);  // the harness parser reads `int n`, not `const int n`
    launch.push_back(size_args[idx]);
  }
  for (size_t idx = 0; idx < launch.size(); ++idx) all_args += (idx ? "," : "") + launch[idx];
  out << "// kforge-launch: " << name << " grid=" << grid << " block=" << block << " args=" << all_args << "\n";
  if (cuda) {
    // The attribute goes before `void`: the harness finds kernels as `__global__ ... void name(`.
    out << "extern \"C\" __global__ " << attributes << "void " << name << "(";
  } else {
    std::string head = attributes.empty() ? "__kernel void " + name + "(" : "void " + name + "(";
    if (!attributes.empty()) out << "__kernel " << attributes.substr(0, attributes.size() - 1) << "\n";
    out << head;
  }
  // One line: the harness's signature parser (worker/harness/program.cpp trim) keeps
  // newlines inside parameter types, so a wrapped signature fails its rules.
  for (size_t idx = 0; idx < all_params.size(); ++idx) out << (idx ? ", " : "") << all_params[idx];
  out << ") {\n" << body << "}\n";
  return out.str();
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t idx = 0; idx < parts.size(); ++idx) out += (idx ? sep : "") + parts[idx];
  return out;
}

std::string reindent(const std::string& text, const std::string& to) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) out += to + line.substr(std::min(line.find_first_not_of(' '), line.size())) + "\n";
  return out;
}

std::string indent_more(const std::string& text, const std::string& extra) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) out += extra + line + "\n";
  return out;
}

std::string group_reduce(const std::string& var, const std::string& op, int wg, const std::string& indent,
                         const Dialect& d) {
  std::ostringstream s;
  if (d.cuda()) {
    // Warp shuffles, then one value per warp through shared memory; every thread ends
    // with the combined value.
    s << indent << "for (int o = 16; o > 0; o >>= 1) " << var << " = "
      << combine_code(op, var, "__shfl_xor_sync(0xffffffffu, " + var + ", o)", d.target) << ";\n";
    s << indent << "if ((lid & 31) == 0) red[lid >> 5] = " << var << ";\n";
    s << indent << "__syncthreads();\n";
    s << indent << var << " = red[0];\n";
    s << indent << "for (int w = 1; w < " << wg / 32 << "; ++w) " << var << " = "
      << combine_code(op, var, "red[w]", d.target) << ";\n";
    s << indent << "__syncthreads();\n";
    return s.str();
  }
  s << indent << "red[lid] = " << var << ";\n";
  s << indent << "barrier(CLK_LOCAL_MEM_FENCE);\n";
  s << indent << "for (int stride = " << wg / 2 << "; stride > 0; stride >>= 1) {\n";
  s << indent << "  if (lid < stride) red[lid] = " << combine_code(op, "red[lid]", "red[lid + stride]") << ";\n";
  s << indent << "  barrier(CLK_LOCAL_MEM_FENCE);\n";
  s << indent << "}\n";
  s << indent << var << " = red[0];\n";
  s << indent << "barrier(CLK_LOCAL_MEM_FENCE);\n";
  return s.str();
}

std::string unroll_pragma(int unroll, const std::string& indent) {
  return unroll > 1 ? indent + "#pragma unroll " + std::to_string(unroll) + "\n" : "";
}

int strip_views(const Graph& graph, int id, bool& transposed) {
  transposed = false;
  while (graph.nodes[id].kind == NodeKind::view) {
    transposed = !transposed;
    id = graph.nodes[id].args[0];
  }
  return id;
}

}  // namespace kforge::codegen::emit
