// The kernel program parser: launch/scratch lines, size expressions, kernel
// signatures, and format errors that name the line. Run: ctest -R harness_program.
#include <gtest/gtest.h>

#include "worker/harness/program.h"
#include "worker/harness/rules.h"

using namespace kforge::harness;

namespace {

const char* kSiluMul = R"(// kforge-launch: silu_mul grid=cdiv(numel(x), 256) block=256 args=x,y,out,numel(x)
__kernel void silu_mul(__global const float* x, __global const float* y,
                       __global float* out, int n) {
  int i = get_global_id(0);
  if (i < n) { float v = x[i]; out[i] = v / (1.0f + exp(-v)) * y[i]; }
}
)";

int64_t eval(const std::string& text, const std::map<std::string, std::vector<int64_t>>& shapes) {
  std::string error;
  auto expr = SizeExpr::parse(text, error);
  EXPECT_TRUE(expr) << error;
  if (!expr) return -1;
  auto value = expr->eval(shapes, error);
  EXPECT_TRUE(value) << error;
  return value.value_or(-1);
}

std::string parse_error(const std::string& text) { return parse_program(text).error; }

}  // namespace

TEST(SizeExpr, EvaluatesArithmeticAndShapeFunctions) {
  std::map<std::string, std::vector<int64_t>> shapes{{"x", {1023, 777}}, {"w", {777, 64}}};
  EXPECT_EQ(eval("cdiv(numel(x), 256)", shapes), (1023 * 777 + 255) / 256);
  EXPECT_EQ(eval("x.size(0) * w.size(-1) + 3 % 2", shapes), 1023 * 64 + 1);
  EXPECT_EQ(eval("min(x.size(1), 100) - max(2, 7) / 2", shapes), 100 - 3);
  EXPECT_EQ(eval("-(4 - 10) * x.numel()", shapes), 6 * 1023 * 777);
  EXPECT_EQ(eval("((2+3))*4", shapes), 20);
}

TEST(SizeExpr, ErrorsSayWhatWasExpected) {
  std::string error;
  EXPECT_FALSE(SizeExpr::parse("cdiv(numel(x) 256)", error));
  EXPECT_NE(error.find("expected ','"), std::string::npos) << error;
  EXPECT_FALSE(SizeExpr::parse("x + 1", error));
  EXPECT_NE(error.find("numel(x) or x.size(d)"), std::string::npos) << error;
  EXPECT_FALSE(SizeExpr::parse("pow(2, 3)", error));
  EXPECT_NE(error.find("known function"), std::string::npos) << error;
  auto expr = SizeExpr::parse("numel(x) / (x.size(0) - 4)", error);
  ASSERT_TRUE(expr);
  EXPECT_FALSE(expr->eval({{"x", {4}}}, error));
  EXPECT_NE(error.find("division by zero"), std::string::npos);
  EXPECT_FALSE(expr->eval({{"y", {4}}}, error));
  EXPECT_NE(error.find("unknown buffer 'x'"), std::string::npos);
  auto dim = SizeExpr::parse("x.size(2)", error);
  ASSERT_TRUE(dim);
  EXPECT_FALSE(dim->eval({{"x", {4, 4}}}, error));
  EXPECT_NE(error.find("has 2 dimensions"), std::string::npos) << error;
}

TEST(Program, ParsesTheDesignExample) {
  auto parsed = parse_program(kSiluMul);
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  const auto& program = parsed.program;
  ASSERT_EQ(program.launches.size(), 1u);
  const auto& launch = program.launches[0];
  EXPECT_EQ(launch.kernel, "silu_mul");
  EXPECT_EQ(launch.line, 1);
  ASSERT_EQ(launch.args.size(), 4u);
  EXPECT_EQ(launch.args[2].kind, LaunchArg::Kind::buffer);
  EXPECT_EQ(launch.args[2].name, "out");
  EXPECT_EQ(launch.args[3].kind, LaunchArg::Kind::integer);
  ASSERT_EQ(program.kernels.size(), 1u);
  const auto& kernel = program.kernels[0];
  EXPECT_EQ(kernel.name, "silu_mul");
  ASSERT_EQ(kernel.params.size(), 4u);
  EXPECT_TRUE(kernel.params[0].is_const);
  EXPECT_TRUE(kernel.params[0].is_global);
  EXPECT_FALSE(kernel.params[2].is_const);
  EXPECT_EQ(kernel.params[3].name, "n");
  EXPECT_FALSE(kernel.params[3].is_pointer);
}

TEST(Program, ScratchMultiDimLaunchesFloatArgsAndFences) {
  auto parsed = parse_program(R"(Here is the kernel:
```c
// kforge-scratch: partial float cdiv(numel(x), 256)
/* __kernel void commented_out(int a) {} */
// kforge-launch: k1 grid=cdiv(x.size(1),16), cdiv(x.size(0),16) block=16,16 args=x,partial,1e-5,x.size(0)
// kforge-launch: k2 grid=1 block=256 args=partial,out
__kernel __attribute__((reqd_work_group_size(16,16,1))) void k1(__global const float* x, __global float* p, float eps, int n) {}
kernel void k2(global const float* restrict p, global float* out) {}
```
)");
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  const auto& program = parsed.program;
  EXPECT_EQ(program.source.find("Here is"), std::string::npos) << "fence content only";
  ASSERT_EQ(program.scratch.size(), 1u);
  EXPECT_EQ(program.scratch[0].name, "partial");
  EXPECT_EQ(program.scratch[0].element_size, 4);
  ASSERT_EQ(program.launches.size(), 2u);
  EXPECT_EQ(program.launches[0].grid.size(), 2u);
  EXPECT_EQ(program.launches[0].args[2].kind, LaunchArg::Kind::real);
  EXPECT_DOUBLE_EQ(program.launches[0].args[2].real, 1e-5);
  ASSERT_EQ(program.kernels.size(), 2u) << "the commented-out kernel does not count";
  EXPECT_EQ(program.kernels[0].name, "k1");
  EXPECT_EQ(program.kernels[1].name, "k2");
  EXPECT_TRUE(program.kernels[1].params[0].is_const);
}

TEST(Program, FormatErrorsNameTheLineAndWhatWasExpected) {
  EXPECT_NE(parse_error("__kernel void f() {}").find("no '// kforge-launch:' line"), std::string::npos);
  EXPECT_NE(parse_error("").find("empty"), std::string::npos);
  auto e = parse_error("\n// kforge-launch: f grid=cdiv(n,2 block=1 args=x\n");
  EXPECT_EQ(e.rfind("line 2: kforge-launch f: grid=", 0), 0u) << e;
  e = parse_error("// kforge-launch: f grid=1 args=x\n");
  EXPECT_NE(e.find("missing block="), std::string::npos) << e;
  e = parse_error("// kforge-launch: f grid=1,1 block=1 args=x\n");
  EXPECT_NE(e.find("grid= has 2 dimensions but block= has 1"), std::string::npos) << e;
  e = parse_error("// kforge-launch: f grid=1 block=1 args=x threads=4\n");
  EXPECT_NE(e.find("unknown key 'threads='"), std::string::npos) << e;
  e = parse_error("\n\n// kforge-scratch: tmp vec4 16\n// kforge-launch: f grid=1 block=1 args=x\n");
  EXPECT_EQ(e.rfind("line 3: kforge-scratch: unknown element type 'vec4'", 0), 0u) << e;
  e = parse_error("// kforge-lunch: f grid=1 block=1 args=x\n");
  EXPECT_NE(e.find("unknown directive 'kforge-lunch'"), std::string::npos) << e;
  e = parse_error("// kforge-launch: grid=1 block=1 args=x\n");
  EXPECT_NE(e.find("expected a kernel name first"), std::string::npos) << e;
}

// Regression: the teacher compiler writes one parameter per line; a parameter's
// type must not keep the newline and indentation (it made `const int n` fail the
// scalar-type rule, so every teacher kernel was a rule_violation).
TEST(Program, ParametersOnTheirOwnLinesHaveCleanTypes) {
  const std::string text =
      "// kforge-launch: k grid=cdiv(numel(x),64) block=64 args=x,out,numel(x)\n"
      "__kernel void k(__global const float* restrict x,\n"
      "                __global float* restrict out,\n"
      "                const int n) {\n"
      "  int i = get_global_id(0);\n"
      "  if (i < n) out[i] = x[i];\n"
      "}\n";
  auto parsed = parse_program(text);
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  const auto& params = parsed.program.kernels.at(0).params;
  ASSERT_EQ(params.size(), 3u);
  EXPECT_EQ(params[2].type, "const int");
  EXPECT_EQ(params[2].name, "n");
  EXPECT_EQ(params[1].type.find('\n'), std::string::npos);
}

TEST(Program, CudaKernelsAreTheCudaDialectWithGlobalPointers) {
  auto parsed = parse_program(R"(// kforge-launch: silu_mul grid=cdiv(numel(x),256) block=256 args=x,y,out,numel(x)
extern "C" __global__ void silu_mul(const float* __restrict__ x, const float* y,
                                    float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { float v = x[i]; out[i] = v / (1.0f + __expf(-v)) * y[i]; }
}
)");
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  EXPECT_EQ(parsed.program.dialect, Dialect::cuda);
  ASSERT_EQ(parsed.program.kernels.size(), 1u);
  const auto& params = parsed.program.kernels[0].params;
  ASSERT_EQ(params.size(), 4u);
  EXPECT_TRUE(params[0].is_global && params[0].is_const && params[0].is_pointer);
  EXPECT_TRUE(params[2].is_global && !params[2].is_const);
  EXPECT_FALSE(params[3].is_pointer);
  EXPECT_EQ(parse_program(kSiluMul).program.dialect, Dialect::opencl);
  BufferNames names;
  names.inputs = {"x", "y"};
  auto violation = check_static_rules(parsed.program, names);
  EXPECT_FALSE(violation) << "a correct cuda program passes the static rules: " << violation->message;
}

TEST(Program, CudaClocksAndDeviceMallocAreForbidden) {
  for (const std::string call : {"clock64()", "clock()", "__nanosleep(100)", "malloc(16)"}) {
    std::string text = "// kforge-launch: k grid=1 block=32 args=x,out\n"
                       "__global__ void k(const float* x, float* out) {\n  auto t = " + call + ";\n  out[0] = x[0];\n}\n";
    auto parsed = parse_program(text);
    ASSERT_TRUE(parsed.ok()) << parsed.error;
    BufferNames names;
    names.inputs = {"x"};
    auto violation = check_static_rules(parsed.program, names);
    ASSERT_TRUE(violation) << call;
    EXPECT_EQ(violation->rule, "forbidden_construct") << call;
  }
}
