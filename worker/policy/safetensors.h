// safetensors read (mmap, copy-on-write) and write, plus sharded HF checkpoints
// (model.safetensors.index.json). Format: u64 LE header length, JSON header, data.
// Tests: tests/worker/policy/safetensors_test.cpp.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <stdexcept>
#include <string>

namespace kforge::policy {

//! A malformed safetensors file or checkpoint; the message names the file and the fault.
class SafetensorsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

//! Tensors by name, in name order.
using TensorMap = std::map<std::string, at::Tensor>;

//! Reads one .safetensors file. Tensors are CPU views of a private (copy-on-write)
//! mapping of the file, so writing to them never touches the file.
TensorMap safetensors_read(const std::string& path);

//! Writes tensors (any device; copied to CPU, made contiguous) to one .safetensors file.
void safetensors_write(const std::string& path, const TensorMap& tensors,
                       const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

//! Reads every tensor of an HF checkpoint directory: model.safetensors, or the shards
//! listed in model.safetensors.index.json (each tensor in the shard the index names).
TensorMap checkpoint_read(const std::string& dir);

//! The safetensors dtype string for a scalar type ("F32", "BF16", ...); throws if none.
std::string safetensors_dtype_name(c10::ScalarType dtype);

}  // namespace kforge::policy
