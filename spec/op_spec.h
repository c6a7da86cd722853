// The op a user submits (TorchScript source, named inputs with shapes, dtypes and
// distributions, extra shapes, tolerance), parsed once at the edge into structs: the
// contract between the API (validation) and the harness (checking). Format: docs/harness.md
// "Op format". Test: ctest -R spec_op_spec_test.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "spec/field.h"

namespace kforge::spec {

//! Element types an op input or output may have.
enum class DType { float32, float16, bfloat16, int32, int64, boolean };

//! "float32", "float16", "bfloat16", "int32", "int64", "bool".
std::string dtype_name(DType dtype);
//! Parses a dtype name; false if unknown.
bool dtype_from_name(const std::string& name, DType& out);
//! Bytes per element (bool is one byte, as in libtorch).
int dtype_size(DType dtype);
//! True for float32, float16 and bfloat16.
bool dtype_is_float(DType dtype);

//! How an input's values are drawn.
enum class DistKind { normal, uniform, randint, ones, zeros };

//! A distribution: normal(a=mean, b=std), uniform [a, b), randint [a, b), or a constant.
struct Dist {
  DistKind kind = DistKind::normal;
  double a = 0.0;  //!< mean (normal) or low bound (uniform, randint)
  double b = 1.0;  //!< std (normal) or exclusive high bound (uniform, randint)
};

//! One named tensor input of an op.
struct InputSpec {
  std::string name;            //!< argument name in forward(), also used in launch lines
  std::vector<int64_t> shape;  //!< main shape; every entry >= 1 (0-d tensors have an empty shape)
  DType dtype = DType::float32;
  Dist dist;                   //!< defaults: normal for floats, randint [0, 10) for ints, [0, 2) for bool
};

//! A full set of input shapes by input name.
using ShapeSet = std::map<std::string, std::vector<int64_t>>;

//! An op: the reference and how to test it.
struct OpSpec {
  std::string name;                   //!< identifier: [A-Za-z_][A-Za-z0-9_]*
  std::string source;                 //!< TorchScript defining forward(...)
  std::vector<InputSpec> inputs;      //!< in forward()'s argument order
  std::vector<ShapeSet> extra_shapes; //!< further shape sets checked too (odd sizes)
  double atol = 1e-4;                 //!< absolute tolerance
  double rtol = 1e-4;                 //!< relative tolerance

  //! The main shapes as a ShapeSet.
  ShapeSet main_shapes() const;
};

//! The result of parse_op_spec: a spec, or every field error found.
struct OpSpecParse {
  bool ok() const { return errors.empty(); }
  OpSpec spec;                     //!< valid only when ok()
  std::vector<FieldError> errors;  //!< empty when ok()
};

//! Parses the op JSON (DESIGN.md "Op format"); never throws. `reject_unknown` (a
//! request) makes members outside the format errors at every level; stored ops and
//! suite files (which carry level, category, split) are read without it.
OpSpecParse parse_op_spec(const std::string& json, bool reject_unknown = false);

//! Serialises a spec back to the same JSON form (canonical: stable key order).
std::string op_spec_to_json(const OpSpec& spec);

//! Number of elements of a shape (1 for an empty shape).
int64_t shape_numel(const std::vector<int64_t>& shape);
//! "[4096, 4096]"
std::string shape_to_string(const std::vector<int64_t>& shape);

}  // namespace kforge::spec
