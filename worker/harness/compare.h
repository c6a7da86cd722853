// Output comparison with tolerances: NaN/Inf must match, the first bad element is
// reported with expected and actual values; near-constant references are flagged
// as weak tests. Test: ctest -R 'harness_(compare|checker|adversarial)'.
#pragma once

#include <cstdint>
#include <string>

#include "worker/harness/reference.h"

namespace kforge::harness {

//! Result of comparing one output.
struct CompareResult {
  bool ok = true;
  int64_t first_bad = -1;  //!< flat index of the first mismatch
  double expected = 0;     //!< reference value there
  double actual = 0;       //!< candidate value there
  int64_t bad_count = 0;   //!< number of mismatching elements
};

//! Compares `actual` (raw bytes in expected's dtype and size) against `expected`:
//! floats within atol + rtol*|expected| with NaN matching NaN and Inf matching Inf of the
//! same sign; integers and bools exactly (byte-exact for bool).
CompareResult compare_output(const HostTensor& expected, const uint8_t* actual, double atol, double rtol);

//! Element `index` of raw data of `dtype` as double.
double element_value(spec::DType dtype, const uint8_t* data, int64_t index);

//! True if the tensor is (nearly) constant: a zero or constant kernel could pass.
bool near_constant(const HostTensor& tensor);

//! A value as messages and stored results show it: 7 significant digits, "nan", "inf", "-inf".
std::string format_value(double value);

//! "[17, 3]" for a flat index in a shape.
std::string index_to_coords(int64_t flat, const std::vector<int64_t>& shape);

}  // namespace kforge::harness
