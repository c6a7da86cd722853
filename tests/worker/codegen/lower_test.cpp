// Teacher compiler without a device: what each op lowers to (stages, fused epilogues,
// scratch), schedule variants, clear `unsupported` reasons, and that every generated
// program parses in the kforge format. Run: ctest -R codegen_lower.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "tests/worker/codegen/suite_ops.h"
#include "worker/codegen/codegen.h"
#include "worker/harness/program.h"

using namespace kforge;
using kforge::testing::suite_op;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(CodegenLower, PointwiseChainFusesIntoOneKernel) {
  auto analysis = codegen::analyze(suite_op("silu_mul"));
  ASSERT_TRUE(analysis.ok()) << analysis.unsupported;
  EXPECT_EQ(analysis.describe(), "pointwise");
  auto gen = codegen::emit_program(analysis, codegen::Schedule{});
  ASSERT_TRUE(gen.ok()) << gen.unsupported;
  auto parsed = harness::parse_program(gen.program);
  ASSERT_TRUE(parsed.ok()) << parsed.error << "\n" << gen.program;
  ASSERT_EQ(parsed.program.launches.size(), 1u);
  EXPECT_TRUE(contains(gen.program, "exp(-")) << gen.program;
  // Sizes come from launch expressions, never from the main shape.
  EXPECT_FALSE(contains(gen.program, "4096")) << gen.program;
  EXPECT_FALSE(contains(gen.program, "2048")) << gen.program;
}

TEST(CodegenLower, ScheduleKnobsChangeTheProgram) {
  auto analysis = codegen::analyze(suite_op("silu_mul"));
  auto space = codegen::schedule_space(analysis);
  EXPECT_GE(space.size(), 8u);
  codegen::Schedule vec;
  vec.vector_width = 4;
  vec.per_item = 4;
  vec.work_group = 128;
  auto gen = codegen::emit_program(analysis, vec);
  ASSERT_TRUE(gen.ok()) << gen.unsupported;
  EXPECT_TRUE(contains(gen.program, "vload4(0, x + i)")) << gen.program;
  EXPECT_TRUE(contains(gen.program, "block=128")) << gen.program;
  EXPECT_TRUE(contains(gen.program, "step < 4")) << gen.program;
}

TEST(CodegenLower, BroadcastOperandsIndexByCoordinatesAndRefuseVectors) {
  auto analysis = codegen::analyze(suite_op("add_bcast_3d"));
  ASSERT_TRUE(analysis.ok()) << analysis.unsupported;
  auto gen = codegen::emit_program(analysis, codegen::Schedule{});
  ASSERT_TRUE(gen.ok());
  EXPECT_TRUE(contains(gen.program, "const int c2 = i % ")) << gen.program;
  codegen::Schedule vec;
  vec.vector_width = 4;
  auto refused = codegen::emit_program(analysis, vec);
  EXPECT_FALSE(refused.ok());
  EXPECT_TRUE(contains(refused.unsupported, "vector_width")) << refused.unsupported;
}

TEST(CodegenLower, LinearWithActivationIsOneTiledKernelWithEpilogue) {
  auto analysis = codegen::analyze(suite_op("linear_gelu"));
  ASSERT_TRUE(analysis.ok()) << analysis.unsupported;
  EXPECT_EQ(analysis.describe(), "matmul");
  codegen::Schedule s;
  s.tile = 32;
  s.work_per_item = 8;
  auto gen = codegen::emit_program(analysis, s);
  ASSERT_TRUE(gen.ok()) << gen.unsupported;
  EXPECT_TRUE(contains(gen.program, "__local float tile_a[32][32]")) << gen.program;
  EXPECT_TRUE(contains(gen.program, "reqd_work_group_size(32, 4, 1)")) << gen.program;
  EXPECT_TRUE(contains(gen.program, "0.707106781f")) << "gelu fused into the store: " << gen.program;
  // linear's weight is [out, in]: read transposed, never copied.
  EXPECT_TRUE(contains(gen.program, "bn * K + bk")) << gen.program;
}

TEST(CodegenLower, AttentionSplitsAtMatmulsWithScratch) {
  auto analysis = codegen::analyze(suite_op("attention"));
  ASSERT_TRUE(analysis.ok()) << analysis.unsupported;
  EXPECT_EQ(analysis.describe(), "matmul+reduce_rows+matmul");
  auto gen = codegen::emit_program(analysis, codegen::Schedule{});
  ASSERT_TRUE(gen.ok()) << gen.unsupported;
  auto parsed = harness::parse_program(gen.program);
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  EXPECT_EQ(parsed.program.launches.size(), 3u);
  EXPECT_EQ(parsed.program.scratch.size(), 2u);
}

TEST(CodegenLower, RowOpsDecomposeIntoReductionsOverTheLastDim) {
  for (const char* name : {"softmax_last", "log_softmax_last", "layer_norm", "rms_norm", "var_last", "cosine_similarity"}) {
    auto analysis = codegen::analyze(suite_op(name));
    ASSERT_TRUE(analysis.ok()) << name << ": " << analysis.unsupported;
    EXPECT_EQ(analysis.describe(), "reduce_rows") << name;
  }
  auto gen = codegen::emit_program(codegen::analyze(suite_op("softmax_last")), codegen::Schedule{});
  EXPECT_TRUE(contains(gen.program, "fmax(acc0")) << gen.program;
  EXPECT_TRUE(contains(gen.program, "barrier(CLK_LOCAL_MEM_FENCE)")) << gen.program;
  codegen::Schedule item;
  item.reduce = codegen::ReduceStrategy::item;
  auto seq = codegen::emit_program(codegen::analyze(suite_op("softmax_last")), item);
  ASSERT_TRUE(seq.ok()) << seq.unsupported;
  EXPECT_FALSE(contains(seq.program, "barrier")) << seq.program;
}

TEST(CodegenLower, FullReductionUsesTwoPassesWithScratch) {
  auto analysis = codegen::analyze(suite_op("mse_loss"));
  ASSERT_TRUE(analysis.ok()) << analysis.unsupported;
  EXPECT_EQ(analysis.describe(), "reduce_full");
  codegen::Schedule s;
  s.partials = 32;
  auto gen = codegen::emit_program(analysis, s);
  EXPECT_TRUE(contains(gen.program, "// kforge-scratch: partial float 32")) << gen.program;
  auto parsed = harness::parse_program(gen.program);
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  EXPECT_EQ(parsed.program.launches.size(), 2u);
}

TEST(CodegenLower, UnsupportedOpsSayWhy) {
  struct Case {
    const char* source;
    const char* reason;
  };
  for (auto c : {Case{"return torch.logcumsumexp(x, 1)", "aten::logcumsumexp has no lowering"},
                 Case{"return torch.argmax(x)", "over all elements (no dim)"},
                 Case{"return torch.argmax(x, 1) + 1", "argmax / argmin result used as data"},
                 Case{"return torch.sum(x, [0, 1, 2])", "reduction dim 2 out of range"}}) {
    spec::OpSpec spec;
    spec.name = "unsupported";
    spec.source = std::string("def forward(x: Tensor) -> Tensor:\n    ") + c.source + "\n";
    spec.inputs.push_back({"x", {8, 16}, spec::DType::float32, {spec::DistKind::normal, 0, 1}});
    auto analysis = codegen::analyze(spec);
    EXPECT_FALSE(analysis.ok()) << c.source;
    EXPECT_TRUE(contains(analysis.unsupported, c.reason)) << c.source << ": " << analysis.unsupported;
    EXPECT_FALSE(codegen::emit_program(analysis, codegen::Schedule{}).ok());
  }
}

TEST(CodegenLower, ArgmaxWritesTheFirstIndexAsLong) {
  for (const char* name : {"argmax_last", "argmin_last"}) {
    auto analysis = codegen::analyze(suite_op(name));
    ASSERT_TRUE(analysis.ok()) << name << ": " << analysis.unsupported;
    EXPECT_EQ(analysis.describe(), "arg_reduce");
    auto gen = codegen::emit_program(analysis, codegen::Schedule{});
    ASSERT_TRUE(gen.ok()) << gen.unsupported;
    EXPECT_TRUE(contains(gen.program, "__global long* restrict out")) << gen.program;
    // Strict comparison keeps the first of equal extremes, as torch does.
    EXPECT_TRUE(contains(gen.program, std::string(name) == "argmax_last" ? "if (v > best" : "if (v < best")) << gen.program;
  }
}

TEST(CodegenLower, FlipAndCatReadRemappedCoordinates) {
  auto flip = codegen::analyze(suite_op("flip_last"));
  ASSERT_TRUE(flip.ok()) << flip.unsupported;
  EXPECT_EQ(flip.describe(), "pointwise");
  auto flipped = codegen::emit_program(flip, codegen::Schedule{});
  ASSERT_TRUE(flipped.ok()) << flipped.unsupported;
  EXPECT_TRUE(contains(flipped.program, "x_size1 - 1 - c1")) << flipped.program;
  codegen::Schedule vec;
  vec.vector_width = 4;
  EXPECT_FALSE(codegen::emit_program(flip, vec).ok()) << "a reversed read is not contiguous with the output";

  auto cat = codegen::analyze(suite_op("cat_last"));
  ASSERT_TRUE(cat.ok()) << cat.unsupported;
  auto joined = codegen::emit_program(cat, codegen::Schedule{});
  ASSERT_TRUE(joined.ok()) << joined.unsupported;
  auto parsed = harness::parse_program(joined.program);
  ASSERT_TRUE(parsed.ok()) << parsed.error << "\n" << joined.program;
  // The joined size is a launch expression, both parts are read in bounds (clamped).
  EXPECT_TRUE(contains(joined.program, "(x.size(1) + y.size(1))")) << joined.program;
  EXPECT_TRUE(contains(joined.program, "clamp((c1 - x_size1), 0, y_size1 - 1)")) << joined.program;
  EXPECT_FALSE(contains(joined.program, "2048")) << joined.program;
}

TEST(CodegenLower, CumsumIsAScanStage) {
  auto last = codegen::analyze(suite_op("cumsum_last"));
  ASSERT_TRUE(last.ok()) << last.unsupported;
  EXPECT_EQ(last.describe(), "scan");
  auto gen = codegen::emit_program(last, codegen::Schedule{});
  ASSERT_TRUE(gen.ok()) << gen.unsupported;
  EXPECT_TRUE(contains(gen.program, "acc += x[base + r];")) << gen.program;
  auto dim0 = codegen::compile_op(suite_op("cumsum_dim0"), codegen::Schedule{});
  ASSERT_TRUE(dim0.ok()) << dim0.unsupported;
  EXPECT_TRUE(contains(dim0.program, "[base + r * lines]")) << "strided along dim 0\n" << dim0.program;
  // A computed operand is materialised first; what follows the scan is its own stage.
  spec::OpSpec spec;
  spec.name = "scan_chain";
  spec.source = "def forward(x: Tensor) -> Tensor:\n    return torch.relu(torch.cumsum(x * 2.0, 1))\n";
  spec.inputs.push_back({"x", {8, 16}, spec::DType::float32, {spec::DistKind::normal, 0, 1}});
  auto chain = codegen::analyze(spec);
  ASSERT_TRUE(chain.ok()) << chain.unsupported;
  EXPECT_EQ(chain.describe(), "pointwise+scan+pointwise");
  EXPECT_GE(codegen::schedule_space(last).size(), 3u);
}

TEST(CodegenLower, GathersReadIntegerIndicesOnce) {
  for (const char* name : {"embedding", "gather_last", "index_select_rows"}) {
    auto analysis = codegen::analyze(suite_op(name));
    ASSERT_TRUE(analysis.ok()) << name << ": " << analysis.unsupported;
    EXPECT_EQ(analysis.describe(), "pointwise") << name;
    auto gen = codegen::emit_program(analysis, codegen::Schedule{});
    ASSERT_TRUE(gen.ok()) << name << ": " << gen.unsupported;
    auto parsed = harness::parse_program(gen.program);
    ASSERT_TRUE(parsed.ok()) << name << ": " << parsed.error << "\n" << gen.program;
    // int64 indices are a long buffer, read once into an int coordinate.
    EXPECT_TRUE(contains(gen.program, "__global const long* restrict idx")) << gen.program;
    EXPECT_TRUE(contains(gen.program, "const int v0 = (int)idx[")) << gen.program;
  }
}

TEST(CodegenLower, IntegerInputsAreOnlyIndices) {
  spec::OpSpec spec;
  spec.name = "int_math";
  spec.source = "def forward(x: Tensor, idx: Tensor) -> Tensor:\n    return x + idx\n";
  spec.inputs.push_back({"x", {8, 16}, spec::DType::float32, {spec::DistKind::normal, 0, 1}});
  spec.inputs.push_back({"idx", {8, 16}, spec::DType::int64, {spec::DistKind::randint, 0, 4}});
  auto analysis = codegen::analyze(spec);
  EXPECT_FALSE(analysis.ok());
  EXPECT_TRUE(contains(analysis.unsupported, "'idx' is an integer tensor")) << analysis.unsupported;
}

// The reduction emitters read at flat offsets: a flip or cat that a reduction reads becomes
// a pointwise stage of its own; one beside the reduction's own reads (in its epilogue, of
// an input) has nothing to stage apart and is refused.
TEST(CodegenLower, FlipOrCatInsideAReductionGetsAStageOfItsOwn) {
  for (const char* source : {"def forward(x: Tensor) -> Tensor:\n    return torch.sum(torch.flip(x, [1]), 1)\n",
                             "def forward(x: Tensor) -> Tensor:\n    return torch.amax(torch.cat([x, x], 1), 1)\n"}) {
    spec::OpSpec spec;
    spec.name = "remap_reduce";
    spec.source = source;
    spec.inputs.push_back({"x", {8, 16}, spec::DType::float32, {spec::DistKind::normal, 0, 1}});
    auto analysis = codegen::analyze(spec);
    ASSERT_TRUE(analysis.ok()) << source << analysis.unsupported;
    EXPECT_EQ(analysis.describe(), "pointwise+reduce_rows") << source;
  }
  spec::OpSpec spec;
  spec.name = "remap_epilogue";
  spec.source = "def forward(x: Tensor) -> Tensor:\n    return torch.sum(x, 1, True) * torch.flip(x, [1])\n";
  spec.inputs.push_back({"x", {8, 16}, spec::DType::float32, {spec::DistKind::normal, 0, 1}});
  auto analysis = codegen::analyze(spec);
  EXPECT_FALSE(analysis.ok());
  EXPECT_TRUE(contains(analysis.unsupported, "inside a reduction region")) << analysis.unsupported;
}

TEST(CodegenLower, EverySupportedSuiteProgramParsesAndVariantsDiffer) {
  int supported = 0, programs = 0;
  for (const auto& path : kforge::testing::suite_files()) {
    auto analysis = codegen::analyze(kforge::testing::load_op_file(path));
    if (!analysis.ok()) {
      EXPECT_FALSE(analysis.unsupported.empty()) << path;
      continue;
    }
    ++supported;
    auto space = codegen::schedule_space(analysis);
    EXPECT_GE(space.size(), 2u) << path << " has too few schedule variants";
    std::set<std::string> distinct;
    for (const auto& schedule : space) {
      auto gen = codegen::emit_program(analysis, schedule);
      ASSERT_TRUE(gen.ok()) << path << " " << schedule.label() << ": " << gen.unsupported;
      auto parsed = harness::parse_program(gen.program);
      EXPECT_TRUE(parsed.ok()) << path << " " << schedule.label() << ": " << parsed.error;
      distinct.insert(gen.program.substr(gen.program.find('\n')));
      ++programs;
    }
    EXPECT_EQ(distinct.size(), space.size()) << path;
  }
  EXPECT_GE(supported, 120);
  std::cout << supported << " suite ops lower, " << programs << " distinct programs\n";
}

namespace {

spec::OpSpec one_input_op(const std::string& body, std::vector<int64_t> shape) {
  spec::OpSpec spec;
  spec.name = "window_case";
  spec.source = "def forward(x: Tensor) -> Tensor:\n    return " + body + "\n";
  spec.inputs.push_back({"x", std::move(shape), spec::DType::float32, {spec::DistKind::normal, 0, 1}});
  return spec;
}

std::vector<int64_t> output_sizes(const codegen::Analysis& analysis) {
  std::vector<int64_t> sizes;
  for (const auto& dim : analysis.graph.nodes[analysis.graph.output].shape) sizes.push_back(dim.value);
  return sizes;
}

}  // namespace

TEST(CodegenLower, ConvWithItsEpilogueIsOneWindowKernel) {
  auto analysis = codegen::analyze(kforge::testing::kernelbench_op("conv2d_relu_bias"));
  ASSERT_TRUE(analysis.ok()) << analysis.unsupported;
  EXPECT_EQ(analysis.describe(), "window") << "bias, relu and the bias add fuse into the conv";
  // x [3, 8, 13, 11], w [6, 4, 3, 3], stride (2, 1), padding (1, 2), dilation (1, 2), groups 2.
  EXPECT_EQ(output_sizes(analysis), (std::vector<int64_t>{3, 6, 7, 11}));
  for (auto target : {codegen::Target::opencl, codegen::Target::cuda, codegen::Target::triton}) {
    auto gen = codegen::emit_program(analysis, codegen::schedule_space(analysis, target).front(), target);
    ASSERT_TRUE(gen.ok()) << gen.unsupported;
    EXPECT_TRUE(contains(gen.program, "conv2d_relu_bias_conv")) << gen.program;
    EXPECT_TRUE(contains(gen.program, "grp")) << "grouped: each output channel reads its group\n" << gen.program;
    // Output sizes are launch formulas over the input and weight sizes, never the main shape's.
    EXPECT_TRUE(contains(gen.program, "(x.size(2) - w.size(2) + 2)")) << gen.program;
    EXPECT_FALSE(contains(gen.program, " 13")) << gen.program;
  }
  auto triton = codegen::emit_program(analysis, codegen::Schedule{}, codegen::Target::triton);
  EXPECT_TRUE(contains(triton.program, "(x.size(2) - w.size(2) + 2) // 2 + 1")) << "Python divides with //\n"
                                                                                  << triton.program;
}

TEST(CodegenLower, ReductionsOverSeveralDimsAreRegrouped) {
  // Adjacent dims: one merged dim of a reshape, read in place (one stage).
  auto spatial = codegen::analyze(one_input_op("torch.mean(x, [2, 3], True)", {4, 5, 6, 7}));
  ASSERT_TRUE(spatial.ok()) << spatial.unsupported;
  EXPECT_EQ(spatial.describe(), "reduce_rows");
  EXPECT_EQ(output_sizes(spatial), (std::vector<int64_t>{4, 5, 1, 1}));
  // Scattered dims: the kept dims first (a permuted copy), then the same row reduction.
  auto scattered = codegen::analyze(one_input_op("torch.sum(x, [0, 2])", {4, 5, 6}));
  ASSERT_TRUE(scattered.ok()) << scattered.unsupported;
  EXPECT_EQ(scattered.describe(), "pointwise+reduce_rows");
  EXPECT_EQ(output_sizes(scattered), (std::vector<int64_t>{5}));
  auto group = codegen::analyze(kforge::testing::kernelbench_op("group_norm"));
  ASSERT_TRUE(group.ok()) << group.unsupported;
  EXPECT_EQ(group.describe(), "reduce_rows+pointwise") << "normalised group rows, then the per-channel affine";
  auto gen = codegen::emit_program(group, codegen::Schedule{});
  ASSERT_TRUE(gen.ok()) << gen.unsupported;
  EXPECT_TRUE(contains(gen.program, "x.size(1) / 3 * x.size(2)*x.size(3)")) << gen.program;
}

TEST(CodegenLower, WindowRefusalsSayWhy) {
  struct Case {
    const char* body;
    const char* reason;
  };
  for (auto c : {Case{"torch.max_pool2d(x, [2, 2], [2, 2], [0, 0], [1, 1], True)", "ceil_mode=True"},
                 Case{"torch.adaptive_avg_pool2d(x, [2, 2])", "output size other than 1"},
                 Case{"torch.max_pool2d(x, [9, 9], [1, 1], [0, 0], [1, 1], False)", "does not fit"}}) {
    auto analysis = codegen::analyze(one_input_op(c.body, {2, 3, 8, 8}));
    EXPECT_FALSE(analysis.ok()) << c.body;
    EXPECT_TRUE(contains(analysis.unsupported, c.reason)) << c.body << ": " << analysis.unsupported;
  }
}

TEST(CodegenLower, TritonConvsWithManyChannelsPerGroupAreImplicitGemms) {
  auto wide = codegen::analyze(kforge::testing::kernelbench_op("conv2d_grouped_wide"));  // 16 outputs, 2 groups
  ASSERT_TRUE(wide.ok()) << wide.unsupported;
  auto space = codegen::schedule_space(wide, codegen::Target::triton);
  ASSERT_GE(space.size(), 2u);
  auto gemm = codegen::emit_program(wide, space.front(), codegen::Target::triton);
  ASSERT_TRUE(gemm.ok()) << gemm.unsupported;
  // tf32x3 tiles first (the tensor cores), then the same tiles in fp32 FMA; 8 channels per
  // group: the first tile is 16 wide, not 64.
  EXPECT_TRUE(contains(gemm.program, "acc = tl.dot(a_tile, b_tile, acc, input_precision=\"tf32x3\")")) << gemm.program;
  EXPECT_EQ(space.front().block_n, 16) << space.front().label();
  EXPECT_TRUE(contains(gemm.program, "input_precision=\"tf32x3\": each fp32 product")) << "the header says so\n"
                                                                                         << gemm.program;
  auto ieee = std::find_if(space.begin(), space.end(), [](const codegen::Schedule& s) { return !s.dot_x3; });
  ASSERT_NE(ieee, space.end());
  EXPECT_TRUE(contains(codegen::emit_program(wide, *ieee, codegen::Target::triton).program,
                       "acc = tl.dot(a_tile, b_tile, acc, input_precision=\"ieee\")"));
  EXPECT_TRUE(contains(gemm.program, "grp = tl.program_id(1)")) << "one grid column per group\n" << gemm.program;
  auto direct = codegen::emit_program(wide, space.back(), codegen::Target::triton);
  ASSERT_TRUE(direct.ok()) << direct.unsupported;
  EXPECT_FALSE(contains(direct.program, "tl.dot")) << direct.program;
  EXPECT_TRUE(contains(space.back().label(), ".direct")) << space.back().label();
  // Depthwise: one output channel per group would leave a tl.dot tile mostly masked.
  auto depthwise = codegen::analyze(kforge::testing::kernelbench_op("conv2d_depthwise"));
  auto dw = codegen::emit_program(depthwise, codegen::schedule_space(depthwise, codegen::Target::triton).front(),
                                  codegen::Target::triton);
  ASSERT_TRUE(dw.ok()) << dw.unsupported;
  EXPECT_FALSE(contains(dw.program, "tl.dot")) << dw.program;
  // A conv followed by a group norm: the norm's variants, the first two also with the conv on
  // tf32x3 on a tile as wide as its channels.
  auto norm = codegen::analyze(kforge::testing::kernelbench_op("conv2d_group_norm_mean"));
  ASSERT_TRUE(norm.ok()) << norm.unsupported;
  auto norm_space = codegen::schedule_space(norm, codegen::Target::triton);
  ASSERT_GE(norm_space.size(), 3u);
  EXPECT_TRUE(norm_space[0].dot_x3 && norm_space[1].dot_x3 && !norm_space[2].dot_x3);
  auto first = codegen::emit_program(norm, norm_space[0], codegen::Target::triton);
  ASSERT_TRUE(first.ok()) << first.unsupported;
  EXPECT_TRUE(contains(first.program, "input_precision=\"tf32x3\"")) << first.program;
  EXPECT_EQ(norm_space[0].block_n, 16) << norm_space[0].label();
}

// A transposed conv with a stride: along each strided (undilated) dim the outputs are split
// by phase (a third grid axis), so a program reads only the taps of its phase, never masking
// three taps in four by divisibility; a dilated strided dim keeps the gather form.
TEST(CodegenLower, TritonTransposedConvsWithAStrideSplitOutputsByPhase) {
  auto strided = codegen::analyze(kforge::testing::kernelbench_op("conv_transpose3d_wide_bias_relu"));  // stride 2,1,2
  ASSERT_TRUE(strided.ok()) << strided.unsupported;
  auto gen = codegen::emit_program(strided, codegen::schedule_space(strided, codegen::Target::triton).front(),
                                   codegen::Target::triton);
  ASSERT_TRUE(gen.ok()) << gen.unsupported;
  EXPECT_TRUE(contains(gen.program, "phase = tl.program_id(2)")) << gen.program;
  EXPECT_TRUE(contains(gen.program, ", 1, 4)](")) << "4 phases (2 x 1 x 2), one group\n" << gen.program;
  EXPECT_TRUE(contains(gen.program, "kw0 = r0 + 2 * j0") && contains(gen.program, "kw2 = r2 + 2 * j2")) << gen.program;
  EXPECT_FALSE(contains(gen.program, "kw1 =")) << "the unstrided dim takes every tap\n" << gen.program;
  EXPECT_FALSE(contains(gen.program, "% 2 == 0")) << "no tap masked by divisibility\n" << gen.program;
  // Dim 0 strided, dim 1 strided and dilated: phases along dim 0 only.
  auto dilated = codegen::analyze(kforge::testing::kernelbench_op("conv_transpose2d_grouped_wide_dilated"));
  ASSERT_TRUE(dilated.ok()) << dilated.unsupported;
  auto mixed = codegen::emit_program(dilated, codegen::schedule_space(dilated, codegen::Target::triton).front(),
                                     codegen::Target::triton);
  ASSERT_TRUE(mixed.ok()) << mixed.unsupported;
  EXPECT_TRUE(contains(mixed.program, ", 2, 2)](")) << "2 groups, 2 phases\n" << mixed.program;
  EXPECT_TRUE(contains(mixed.program, "kw0 = r0 + 2 * j0")) << mixed.program;
  EXPECT_TRUE(contains(mixed.program, "u1 % 2 == 0")) << "dim 1 in the gather form\n" << mixed.program;
}

// Convs with 8 or more input channels per group start the triton space with the taps-outer
// form of the first two schedules (tf32x3) in one pipelined loop over (tap, channel block),
// and end it with the same two in static loops per window dim; the weight is laid out by tap
// first. A phased transposed conv and a 3-channel conv have neither.
TEST(CodegenLower, TritonConvsTryTheTapsOuterLoopFirstAndTheStaticLoopsLast) {
  auto stride1 = codegen::analyze(kforge::testing::kernelbench_op("conv_transpose2d_grouped_stride1_dilated"));
  ASSERT_TRUE(stride1.ok()) << stride1.unsupported;
  auto space = codegen::schedule_space(stride1, codegen::Target::triton);
  const size_t n = space.size();
  ASSERT_GE(n, 5u);
  for (size_t idx : {size_t{0}, size_t{1}, n - 2, n - 1}) {
    EXPECT_EQ(space[idx].conv_taps_outer, idx < 2 ? 2 : 1) << space[idx].label();
    EXPECT_EQ(space[idx].dot_x3, 1) << space[idx].label();
    EXPECT_EQ(space[idx].block_k, 16) << "8 input channels per group: " << space[idx].label();
    EXPECT_TRUE(contains(space[idx].label(), idx < 2 ? ".tapsl" : ".taps")) << space[idx].label();
  }
  for (size_t idx = 2; idx + 2 < n; ++idx) EXPECT_EQ(space[idx].conv_taps_outer, 0) << space[idx].label();
  auto loop = codegen::emit_program(stride1, space[0], codegen::Target::triton);
  ASSERT_TRUE(loop.ok()) << loop.unsupported;
  EXPECT_TRUE(contains(loop.program, "for step in range(0, KD0 * KD1 * cblocks):")) << loop.program;
  EXPECT_TRUE(contains(loop.program, "kd1 = tap % KD1")) << "the tap taken apart per step\n" << loop.program;
  EXPECT_FALSE(contains(loop.program, "tl.static_range")) << loop.program;
  auto unrolled = codegen::emit_program(stride1, space[n - 2], codegen::Target::triton);
  ASSERT_TRUE(unrolled.ok()) << unrolled.unsupported;
  EXPECT_TRUE(contains(unrolled.program, "for kd0 in tl.static_range(KD0):")) << unrolled.program;
  EXPECT_TRUE(contains(unrolled.program, "for c0 in range(0, cin_group, BLOCK_K):")) << unrolled.program;
  for (const auto* gen : {&loop, &unrolled}) {
    EXPECT_TRUE(contains(gen->program, "KD1=w.size(3)")) << "window sizes as constexprs\n" << gen->program;
    EXPECT_TRUE(contains(gen->program, "_conv_wt(")) << "the tap-major weight kernel\n" << gen->program;
    EXPECT_FALSE(contains(gen->program, "rk % ")) << "no per-element tap decomposition\n" << gen->program;
  }
  for (const char* name : {"conv_transpose3d_wide_bias_relu", "conv3d_wide_relu"}) {
    auto other = codegen::analyze(kforge::testing::kernelbench_op(name));
    ASSERT_TRUE(other.ok()) << name << ": " << other.unsupported;
    for (const auto& s : codegen::schedule_space(other, codegen::Target::triton))
      EXPECT_EQ(s.conv_taps_outer, 0) << name << " " << s.label();
  }
}

// A conv whose every later node is elementwise, up to the output, takes them all as its
// epilogue, a DAG too: hardswish reads the conv twice (x * clamp(x + 3, 0, 6) / 6), where
// the single-user chain from the conv would stop at once and leave the activation to a
// pointwise kernel of its own.
TEST(CodegenLower, ConvsFuseAnElementwiseDagUpToTheOutput) {
  auto op = codegen::analyze(kforge::testing::kernelbench_op("conv2d_wide_hardswish"));
  ASSERT_TRUE(op.ok()) << op.unsupported;
  ASSERT_EQ(op.stages.size(), 1u) << "one kernel: the conv with its epilogue";
  EXPECT_EQ(op.stages[0].kind, codegen::StageKind::window);
  for (auto target : {codegen::Target::opencl, codegen::Target::triton, codegen::Target::cuda}) {
    auto gen = codegen::emit_program(op, codegen::schedule_space(op, target).front(), target);
    ASSERT_TRUE(gen.ok()) << gen.unsupported;
    EXPECT_FALSE(contains(gen.program, "pointwise")) << gen.program;
  }
}

// A reduction over another dim with few outputs (amax over dim 0 of 4096 x 2048: 33 programs
// of 64 outputs in Triton, 2048 threads in CUDA): split schedules first, the slices side by
// side into a scratch, then a kernel reducing them with the epilogue; a last-dim reduction
// has none. The widest split (32 slices of 128 rows, about eight programs per SM) comes
// before the two with about two per SM (8 slices).
TEST(CodegenLower, TritonReductionsWithFewOutputsOverALongDimSplit) {
  auto amax = codegen::analyze(suite_op("amax_dim0"));
  ASSERT_TRUE(amax.ok()) << amax.unsupported;
  auto space = codegen::schedule_space(amax, codegen::Target::triton);
  ASSERT_GE(space.size(), 4u);
  EXPECT_EQ(space[0].split_r, 32) << space[0].label();
  EXPECT_TRUE(contains(space[0].label(), ".sr32")) << space[0].label();
  EXPECT_EQ(space[1].split_r, 8) << space[1].label();
  EXPECT_EQ(space[2].split_r, 8) << space[2].label();
  EXPECT_EQ(space[3].split_r, 1) << "the unsplit schedules follow";
  auto gen = codegen::emit_program(amax, space[1], codegen::Target::triton);
  ASSERT_TRUE(gen.ok()) << gen.unsupported;
  EXPECT_TRUE(contains(gen.program, "def amax_dim0_rows_partial(")) << gen.program;
  EXPECT_TRUE(contains(gen.program, "sp = tl.program_id(1)")) << gen.program;
  EXPECT_TRUE(contains(gen.program, "rsplit = torch.empty((8 * x.size(1),)")) << gen.program;
  auto wide = codegen::emit_program(amax, space[0], codegen::Target::triton);
  ASSERT_TRUE(wide.ok()) << wide.unsupported;
  EXPECT_TRUE(contains(wide.program, "rsplit = torch.empty((32 * x.size(1),)")) << wide.program;
  EXPECT_TRUE(contains(gen.program, "red0 = tl.max(tl.load(rsplit + sp * inner")) << gen.program;
  // The mean divides the slices' sum by the whole reduced length, in the second kernel.
  auto mean = codegen::analyze(suite_op("mean_gelu_dim0"));
  auto mean_gen = codegen::emit_program(mean, codegen::schedule_space(mean, codegen::Target::triton).front(),
                                        codegen::Target::triton);
  ASSERT_TRUE(mean_gen.ok()) << mean_gen.unsupported;
  EXPECT_TRUE(contains(mean_gen.program, "v0 = red0 / x_size0")) << mean_gen.program;
  for (const char* name : {"sum_last", "softmax_last", "cumsum_dim0"}) {
    auto other = codegen::analyze(suite_op(name));
    ASSERT_TRUE(other.ok()) << name;
    for (auto target : {codegen::Target::triton, codegen::Target::cuda})
      for (const auto& s : codegen::schedule_space(other, target)) EXPECT_EQ(s.split_r, 1) << name << " " << s.label();
  }
  // CUDA's thread per output: 64 slices of 64 rows (2048 outputs x 64 = 128K threads), two
  // kernels; first twice the slices (128 of 32 rows, 256K threads).
  auto cuda = codegen::schedule_space(amax, codegen::Target::cuda);
  ASSERT_GE(cuda.size(), 2u);
  EXPECT_EQ(cuda[0].split_r, 128) << cuda[0].label();
  EXPECT_EQ(cuda[1].split_r, 64) << cuda[1].label();
  auto cuda_gen = codegen::emit_program(amax, cuda[1], codegen::Target::cuda);
  ASSERT_TRUE(cuda_gen.ok()) << cuda_gen.unsupported;
  EXPECT_TRUE(contains(cuda_gen.program, "// kforge-scratch: rsplit float 64 * 1*x.size(1)")) << cuda_gen.program;
  EXPECT_TRUE(contains(cuda_gen.program, "for (int sp = 0; sp < 64; ++sp) acc = fmaxf(acc, rsplit[sp * groups + gid]);"))
      << cuda_gen.program;
}

// A matrix-vector product reads rows in Triton too: BLOCK_M rows a program along K, products
// summed by tl.sum, no tl.dot (whose 16-64-wide tile would compute one useful column); first,
// or after the split-K pair when K is long and the rows few. Other matmuls have none.
TEST(CodegenLower, TritonMatrixVectorProductsReadRows) {
  auto mv = codegen::analyze(suite_op("matvec"));  // [8192, 2048] @ [2048]
  ASSERT_TRUE(mv.ok()) << mv.unsupported;
  auto space = codegen::schedule_space(mv, codegen::Target::triton);
  ASSERT_GE(space.size(), 3u);
  EXPECT_TRUE(space[0].line_group && space[1].line_group) << space[0].label() << " " << space[1].label();
  EXPECT_FALSE(space[2].line_group) << "the tiles follow";
  EXPECT_TRUE(contains(space[0].label(), ".lg")) << space[0].label();
  auto gen = codegen::emit_program(mv, space[0], codegen::Target::triton);
  ASSERT_TRUE(gen.ok()) << gen.unsupported;
  EXPECT_TRUE(contains(gen.program, "acc = tl.sum(prod, axis=1, keep_dims=True)")) << gen.program;
  EXPECT_FALSE(contains(gen.program, "tl.dot")) << gen.program;
  EXPECT_TRUE(contains(gen.program, "[(triton.cdiv(x.size(0), 8),)]")) << gen.program;
  auto long_k = codegen::analyze(kforge::testing::kernelbench_op("matvec_long_k"));  // [48, 10000] @ [10000]
  ASSERT_TRUE(long_k.ok()) << long_k.unsupported;
  auto long_space = codegen::schedule_space(long_k, codegen::Target::triton);
  ASSERT_GE(long_space.size(), 4u);
  EXPECT_GT(long_space[0].split_k, 1) << long_space[0].label();
  EXPECT_TRUE(long_space[2].line_group && long_space[3].line_group) << long_space[2].label();
  auto linear = codegen::analyze(suite_op("linear_gelu"));
  for (const auto& s : codegen::schedule_space(linear, codegen::Target::triton))
    EXPECT_FALSE(s.line_group) << s.label();
}

// Few output tiles over a long K: split-K schedules come first in Triton, two kernels through
// a scratch of partial tiles; a matmul with tiles enough for the GPU has none.
TEST(CodegenLower, TritonMatmulsWithFewTilesOverALongKSplitK) {
  auto matvec = codegen::analyze(kforge::testing::kernelbench_op("matvec_long_k"));  // [48, 10000] @ [10000]
  ASSERT_TRUE(matvec.ok()) << matvec.unsupported;
  auto space = codegen::schedule_space(matvec, codegen::Target::triton);
  ASSERT_GE(space.size(), 3u);
  EXPECT_EQ(space[0].split_k, 4) << "one 64x16 tile: slices of 10000 / 4 >= 2048 " << space[0].label();
  EXPECT_EQ(space[0].block_n, 16) << "N = 1 fills a 16-wide tile, not 64";
  EXPECT_TRUE(space[0].dot_x3 && !space[1].dot_x3 && space[1].split_k == 4) << space[1].label();
  EXPECT_EQ(space[2].split_k, 1) << "the unsplit tiles follow";
  EXPECT_TRUE(contains(space[0].label(), ".sk4")) << space[0].label();
  auto gen = codegen::emit_program(matvec, space[0], codegen::Target::triton);
  ASSERT_TRUE(gen.ok()) << gen.unsupported;
  const std::string& p = gen.program;
  EXPECT_TRUE(contains(p, "splitk = torch.empty((4 * 1 * a.size(0) * 1,)")) << p;
  EXPECT_TRUE(contains(p, "sk = tl.program_id(1)")) << p;
  EXPECT_TRUE(contains(p, "for k0 in range(k_first, tl.minimum(k_first + k_slice, K), BLOCK_K):")) << p;
  EXPECT_TRUE(contains(p, "for sk in range(4):")) << "the second kernel sums the slices\n" << p;
  const size_t partial = p.find("_partial[("), final_launch = p.find("_matmul[(");
  ASSERT_NE(partial, std::string::npos) << p;
  ASSERT_NE(final_launch, std::string::npos) << p;
  EXPECT_LT(partial, final_launch) << "partials first, then their sum\n" << p;
  EXPECT_TRUE(contains(p.substr(partial), ", 4)](")) << "a grid axis of slices\n" << p;
  // The epilogue (* 0.5) is applied once, after the sum, not per slice.
  EXPECT_GT(p.find("0.5"), p.find("for sk in range(4):")) << p;

  for (const char* op : {"linear_gelu", "bmm"}) {
    auto analysis = codegen::analyze(kforge::testing::suite_op(op));
    ASSERT_TRUE(analysis.ok()) << analysis.unsupported;
    for (const auto& schedule : codegen::schedule_space(analysis, codegen::Target::triton))
      EXPECT_EQ(schedule.split_k, 1) << op << " has a short K: " << schedule.label();
  }
}

// Every KernelBench-shaped test op lowers and emits in every target. The test runs under
// MALLOC_PERTURB_ (tests/CMakeLists.txt), so a reference into the graph's node vector kept
// across a node add reads poisoned memory here, not only on some other host's allocator.
TEST(CodegenLower, EveryKernelBenchTestOpLowersInEveryTarget) {
  for (const auto& path : kforge::testing::kernelbench_op_files()) {
    auto analysis = codegen::analyze(kforge::testing::load_op_file(path));
    ASSERT_TRUE(analysis.ok()) << path.filename() << ": " << analysis.unsupported;
    for (auto target : {codegen::Target::opencl, codegen::Target::cuda, codegen::Target::triton}) {
      auto space = codegen::schedule_space(analysis, target);
      ASSERT_FALSE(space.empty()) << path.filename();
      auto gen = codegen::emit_program(analysis, space.front(), target);
      EXPECT_TRUE(gen.ok()) << path.filename() << ": " << gen.unsupported;
    }
  }
}
