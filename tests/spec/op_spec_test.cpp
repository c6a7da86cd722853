// parse_op_spec: valid ops parse into structs; each kind of bad field is reported
// by name. Run: ctest -R spec_op_spec_test.
#include <gtest/gtest.h>

#include "spec/op_spec.h"

using namespace kforge::spec;

namespace {

const char* kSiluMul = R"({
  "name": "silu_mul",
  "source": "def forward(x: Tensor, y: Tensor) -> Tensor:\n    return torch.silu(x) * y\n",
  "inputs": [ {"name": "x", "shape": [4096, 4096], "dtype": "float32", "dist": "normal"},
              {"name": "y", "shape": [4096, 4096], "dtype": "float32", "dist": {"uniform": [-2, 3]}} ],
  "extra_shapes": [ {"x": [1023, 777], "y": [1023, 777]} ],
  "tolerance": {"atol": 1e-5, "rtol": 2e-4} })";

bool has_field_error(const OpSpecParse& parsed, const std::string& field) {
  for (const auto& e : parsed.errors)
    if (e.field == field) return true;
  return false;
}

}  // namespace

TEST(OpSpec, ParsesTheDesignExample) {
  auto parsed = parse_op_spec(kSiluMul);
  ASSERT_TRUE(parsed.ok()) << describe_errors(parsed.errors);
  const auto& spec = parsed.spec;
  EXPECT_EQ(spec.name, "silu_mul");
  ASSERT_EQ(spec.inputs.size(), 2u);
  EXPECT_EQ(spec.inputs[0].shape, (std::vector<int64_t>{4096, 4096}));
  EXPECT_EQ(spec.inputs[1].dist.kind, DistKind::uniform);
  EXPECT_DOUBLE_EQ(spec.inputs[1].dist.a, -2);
  EXPECT_DOUBLE_EQ(spec.inputs[1].dist.b, 3);
  ASSERT_EQ(spec.extra_shapes.size(), 1u);
  EXPECT_EQ(spec.extra_shapes[0].at("y"), (std::vector<int64_t>{1023, 777}));
  EXPECT_DOUBLE_EQ(spec.atol, 1e-5);
  EXPECT_DOUBLE_EQ(spec.rtol, 2e-4);
}

TEST(OpSpec, RoundTripsThroughJson) {
  auto parsed = parse_op_spec(kSiluMul);
  ASSERT_TRUE(parsed.ok());
  auto again = parse_op_spec(op_spec_to_json(parsed.spec));
  ASSERT_TRUE(again.ok()) << describe_errors(again.errors);
  EXPECT_EQ(op_spec_to_json(again.spec), op_spec_to_json(parsed.spec));
}

TEST(OpSpec, DefaultsDistByDtypeAndFillsPartialExtraShapes) {
  auto parsed = parse_op_spec(R"({"name":"g","source":"def forward(a, i):\n  return a\n",
    "inputs":[{"name":"a","shape":[8,3]},{"name":"i","shape":[5],"dtype":"int64"}],
    "extra_shapes":[{"a":[9,3]}]})");
  ASSERT_TRUE(parsed.ok()) << describe_errors(parsed.errors);
  EXPECT_EQ(parsed.spec.inputs[0].dtype, DType::float32);
  EXPECT_EQ(parsed.spec.inputs[0].dist.kind, DistKind::normal);
  EXPECT_EQ(parsed.spec.inputs[1].dist.kind, DistKind::randint);
  EXPECT_EQ(parsed.spec.extra_shapes[0].at("i"), (std::vector<int64_t>{5}));
}

TEST(OpSpec, NamesEachBadField) {
  auto parsed = parse_op_spec(R"({"name":"bad name","source":"  ",
    "inputs":[{"name":"x","shape":[4,4]},{"name":"x","shape":[0,2],"dtype":"float64","dist":{"gamma":[1,2]}},
              {"name":"out","shape":[3]}, {"name":"k","shape":[3],"dtype":"int32","dist":"normal"}],
    "extra_shapes":[{"z":[1]}], "tolerance":{"atol":-1}})");
  ASSERT_FALSE(parsed.ok());
  for (const char* field : {"name", "source", "inputs[1].name", "inputs[1].shape", "inputs[1].dtype",
                            "inputs[2].name", "inputs[3].dist", "extra_shapes[0].z", "tolerance.atol"})
    EXPECT_TRUE(has_field_error(parsed, field)) << field << " not reported in: " << describe_errors(parsed.errors);
  EXPECT_NE(describe_errors(parsed.errors).find("dimension 0 must be an integer >= 1"), std::string::npos);
}

TEST(OpSpec, RejectsNonJsonAndMissingFields) {
  auto bad_json = parse_op_spec("{not json");
  ASSERT_FALSE(bad_json.ok());
  EXPECT_NE(bad_json.errors[0].message.find("invalid JSON"), std::string::npos);
  auto empty = parse_op_spec("{}");
  EXPECT_TRUE(has_field_error(empty, "name"));
  EXPECT_TRUE(has_field_error(empty, "source"));
  EXPECT_TRUE(has_field_error(empty, "inputs"));
  auto huge = parse_op_spec(R"({"name":"h","source":"def forward(x):\n return x\n",
    "inputs":[{"name":"x","shape":[1000000, 1000000]}]})");
  EXPECT_TRUE(has_field_error(huge, "inputs[0].shape"));
}
