// The kernel program format (docs/kernel-format.md): OpenCL C source plus
// `// kforge-launch:` and `// kforge-scratch:` lines with size expressions.
// parse_program never throws; errors name the line and what was expected.
// Test: ctest -R harness_program.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kforge::harness {

//! A parsed size expression (integers, + - * / %, cdiv, min, max, numel(x), x.size(d)).
class SizeExpr {
 public:
  //! Parses `text`; on failure returns nullptr and sets `error` ("expected ... at column N").
  static std::shared_ptr<const SizeExpr> parse(const std::string& text, std::string& error);
  virtual ~SizeExpr() = default;
  //! Evaluates with buffer shapes by name; nullopt and `error` on unknown names, division by zero, overflow.
  virtual std::optional<int64_t> eval(const std::map<std::string, std::vector<int64_t>>& shapes,
                                      std::string& error) const = 0;
  //! Buffer names the expression refers to (numel(x), x.size(0)).
  virtual void names(std::vector<std::string>& out) const = 0;
};
using SizeExprPtr = std::shared_ptr<const SizeExpr>;

//! One argument of a launch: a buffer name, an integer expression or a float constant.
struct LaunchArg {
  enum class Kind { buffer, integer, real };
  Kind kind = Kind::buffer;
  std::string text;   //!< as written
  std::string name;   //!< buffer name (Kind::buffer)
  SizeExprPtr expr;   //!< Kind::integer
  double real = 0;    //!< Kind::real (e.g. 1e-5)
};

//! One `// kforge-launch:` line; launches run in program order.
struct Launch {
  int line = 0;                    //!< 1-based line in the program text
  std::string kernel;              //!< kernel function name
  std::vector<SizeExprPtr> grid;   //!< work-groups per dimension (1-3)
  std::vector<SizeExprPtr> block;  //!< work-items per group per dimension (same count as grid)
  std::vector<LaunchArg> args;     //!< in the kernel's parameter order
};

//! One `// kforge-scratch: name type count` line: a device buffer the harness allocates.
struct ScratchDecl {
  int line = 0;
  std::string name;
  std::string type;      //!< OpenCL element type: float, half, double, int, uint, long, ulong, char, uchar, short, ushort
  int element_size = 4;  //!< bytes per element
  SizeExprPtr count;     //!< number of elements
};

//! One kernel parameter as declared in the source.
struct KernelParam {
  std::string name;
  std::string type;         //!< declaration without the name, e.g. "__global const float*"
  bool is_pointer = false;
  bool is_const = false;    //!< pointer to const (read-only)
  bool is_global = false;   //!< __global / global address space (every pointer of a CUDA kernel)
  bool is_local = false;    //!< __local / local address space
};

//! One `__kernel void name(...)` (OpenCL) or `__global__ void name(...)` (CUDA) found in the
//! source (comments ignored).
struct KernelDecl {
  int line = 0;
  size_t body_begin = 0;  //!< offset of the body's '{' in code_without_comments
  size_t body_end = 0;    //!< offset just past the matching '}'
  std::string name;
  std::vector<KernelParam> params;
};

//! Which kernel language the source is written in (from its kernel declarations).
enum class Dialect { opencl, cuda };

//! A parsed program.
struct KernelProgram {
  Dialect dialect = Dialect::opencl;  //!< cuda when the kernels are declared `__global__ void name(...)`
  std::string source;                //!< the OpenCL C text handed to the compiler (fences stripped)
  std::vector<Launch> launches;
  std::vector<ScratchDecl> scratch;
  std::vector<KernelDecl> kernels;   //!< declared kernels, in source order
  std::string code_without_comments; //!< source with comments and strings blanked (same offsets), for static rules
  std::string code_as_lexed;         //!< as the compiler's lexer sees it: trigraphs and %: replaced, line splices
                                     //!< joined, then comments and strings blanked (offsets differ), for static rules
};

//! parse_program's result: a program, or a format error naming the line.
struct ProgramParse {
  bool ok() const { return error.empty(); }
  KernelProgram program;
  std::string error;  //!< "line 3: kforge-launch: expected grid=..., got ..."
  int line = 0;       //!< line of the error (0 if not tied to a line)
};

//! Parses a program text. A ```-fenced block, if present, is taken as the program.
ProgramParse parse_program(const std::string& text);
//! Offset of the first byte that is not part of valid UTF-8 (overlong forms, surrogates'
//! range beyond U+10FFFF and truncated sequences included), or npos.
size_t invalid_utf8_offset(const std::string& text);

//! The first ```-fenced block of a model's chat-style answer, or the text itself.
std::string strip_fence(const std::string& text);

//! Name of output `index` of `count` outputs: "out" when count is 1 (out0 also works), else "outN".
std::string output_name(size_t index, size_t count);

}  // namespace kforge::harness
