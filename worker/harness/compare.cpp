// Output comparison (compare.h); torch-free half/bfloat16 decoding.
// Test: ctest -R 'harness_(checker|adversarial)' (wrong outputs, NaN and Inf, weak tests).
#include "worker/harness/compare.h"

#include <cmath>
#include <cstring>
#include <algorithm>
#include <limits>
#include <thread>
#include <vector>
#include <sstream>

namespace kforge::harness {

using spec::DType;
using spec::dtype_is_float;
using spec::dtype_size;
using spec::shape_to_string;

namespace {

float half_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exponent = 127 - 15 + 1;
      while (!(mantissa & 0x400u)) {
        mantissa <<= 1;
        --exponent;
      }
      bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
    }
  } else if (exponent == 31) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

}  // namespace

std::string format_value(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::ostringstream out;
  out.precision(7);
  out << v;
  return out.str();
}

double element_value(DType dtype, const uint8_t* data, int64_t index) {
  const uint8_t* p = data + index * dtype_size(dtype);
  switch (dtype) {
    case DType::float32: { float v; std::memcpy(&v, p, 4); return v; }
    case DType::float16: { uint16_t v; std::memcpy(&v, p, 2); return half_to_float(v); }
    case DType::bfloat16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      uint32_t bits = uint32_t{v} << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    case DType::int32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::int64: { int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
    case DType::boolean: return *p;
  }
  return 0;
}

double HostTensor::value_at(int64_t index) const { return element_value(dtype, data.data(), index); }

namespace {

// One element pair: the tolerance rule of compare.h (NaN matches only NaN, an infinity only
// itself, integers exactly).
bool values_match(double want, double got, bool is_float, double atol, double rtol) {
  if (!is_float) return want == got;
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
  if (std::isinf(want) || std::isinf(got)) return want == got;
  return std::fabs(got - want) <= atol + rtol * std::fabs(want);
}

// The comparison loop for one element type, decoded by `decode`: a finite expected value
// within tolerance (nearly every element) takes the short test; the rest the full rule.
// Typed, so the compiler sees a plain loop (~20x the per-element dtype dispatch).
template <typename Raw, typename Decode>
void compare_typed(const uint8_t* expected, const uint8_t* actual, int64_t begin, int64_t end, bool is_float,
                   double atol, double rtol, Decode decode, CompareResult& result) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for (int64_t idx = begin; idx < end; ++idx) {
    Raw want_raw, got_raw;
    std::memcpy(&want_raw, expected + idx * sizeof(Raw), sizeof(Raw));
    std::memcpy(&got_raw, actual + idx * sizeof(Raw), sizeof(Raw));
    const double want = decode(want_raw), got = decode(got_raw);
    if (is_float && std::fabs(want) < kInf && std::fabs(got - want) <= atol + rtol * std::fabs(want)) continue;
    if (values_match(want, got, is_float, atol, rtol)) continue;
    if (result.ok) {
      result.ok = false;
      result.first_bad = idx;
      result.expected = want;
      result.actual = got;
    }
    ++result.bad_count;
  }
}

float bfloat16_to_float(uint16_t v) {
  uint32_t bits = uint32_t{v} << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Elements [begin, end) of one output.
CompareResult compare_range(const HostTensor& expected, const uint8_t* actual, int64_t begin, int64_t end,
                            double atol, double rtol) {
  CompareResult result;
  const bool is_float = dtype_is_float(expected.dtype);
  const uint8_t* want = expected.data.data();
  switch (expected.dtype) {
    case DType::float32:
      compare_typed<float>(want, actual, begin, end, is_float, atol, rtol, [](float v) { return double{v}; }, result);
      break;
    case DType::float16:
      compare_typed<uint16_t>(want, actual, begin, end, is_float, atol, rtol, half_to_float, result);
      break;
    case DType::bfloat16:
      compare_typed<uint16_t>(want, actual, begin, end, is_float, atol, rtol, bfloat16_to_float, result);
      break;
    case DType::int32:
      compare_typed<int32_t>(want, actual, begin, end, is_float, atol, rtol, [](int32_t v) { return double(v); },
                             result);
      break;
    case DType::int64:
      compare_typed<int64_t>(want, actual, begin, end, is_float, atol, rtol, [](int64_t v) { return double(v); },
                             result);
      break;
    case DType::boolean:
      compare_typed<uint8_t>(want, actual, begin, end, is_float, atol, rtol, [](uint8_t v) { return double(v); },
                             result);
      break;
  }
  return result;
}

}  // namespace

// Large outputs are compared in slices on several threads (the parent's cores are idle
// between a candidate's trials; a GPU host has many): the verdict is the same, the first
// bad element being the first of the first slice with one.
CompareResult compare_output(const HostTensor& expected, const uint8_t* actual, double atol, double rtol) {
  constexpr int64_t kSlice = int64_t{1} << 20;
  const int64_t count = expected.numel();
  const int64_t threads =
      std::min<int64_t>({count / kSlice, std::max(1u, std::thread::hardware_concurrency()), int64_t{8}});
  if (threads <= 1) return compare_range(expected, actual, 0, count, atol, rtol);
  std::vector<CompareResult> parts(static_cast<size_t>(threads));
  std::vector<std::thread> workers;
  for (int64_t part = 0; part < threads; ++part)
    workers.emplace_back([&, part] {
      parts[static_cast<size_t>(part)] =
          compare_range(expected, actual, count * part / threads, count * (part + 1) / threads, atol, rtol);
    });
  for (auto& worker : workers) worker.join();
  CompareResult result;
  for (const auto& part : parts) {
    if (result.ok && !part.ok) result = part;
    else result.bad_count += part.bad_count;
  }
  return result;
}

bool near_constant(const HostTensor& tensor) {
  const int64_t count = tensor.numel();
  if (count <= 1) return true;
  double first = tensor.value_at(0), max_abs = 0, max_dev = 0;
  for (int64_t idx = 0; idx < count; ++idx) {
    double v = tensor.value_at(idx);
    if (!std::isfinite(v)) return false;
    max_abs = std::max(max_abs, std::fabs(v));
    max_dev = std::max(max_dev, std::fabs(v - first));
  }
  return max_dev <= 1e-6 * std::max(1.0, max_abs);
}

std::string index_to_coords(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> coords(shape.size());
  for (size_t dim = shape.size(); dim-- > 0;) {
    coords[dim] = flat % shape[dim];
    flat /= shape[dim];
  }
  return shape_to_string(coords);
}

}  // namespace kforge::harness
