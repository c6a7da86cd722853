// safetensors: validated header parsing over an mmap'd file; every fault (short
// file, bad header length, bad JSON, unknown dtype, offsets out of range or
// overlapping, size not matching the shape) is a SafetensorsError naming the file.
// Test: ctest -R policy_test (safetensors_test.cpp).
#include "worker/policy/safetensors.h"

#include <ATen/ATen.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace kforge::policy {

namespace {

struct DtypeInfo {
  const char* name;
  c10::ScalarType type;
  int64_t size;
};

const DtypeInfo kDtypes[] = {
    {"F64", at::kDouble, 8}, {"F32", at::kFloat, 4}, {"F16", at::kHalf, 2},  {"BF16", at::kBFloat16, 2},
    {"I64", at::kLong, 8},   {"I32", at::kInt, 4},   {"I16", at::kShort, 2}, {"I8", at::kChar, 1},
    {"U8", at::kByte, 1},    {"BOOL", at::kBool, 1},
};

const DtypeInfo* dtype_by_name(const std::string& name) {
  for (const auto& info : kDtypes) {
    if (name == info.name) return &info;
  }
  return nullptr;
}

// Owns one mapping; tensors keep it alive through their deleter's shared_ptr.
class Mapping {
 public:
  Mapping(void* data, std::size_t size) : data_(data), size_(size) {}
  ~Mapping() {
    if (data_ && data_ != MAP_FAILED) munmap(data_, size_);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  char* bytes() const { return static_cast<char*>(data_); }
  std::size_t size() const { return size_; }

 private:
  void* data_;
  std::size_t size_;
};

std::shared_ptr<Mapping> map_file(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw SafetensorsError(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    throw SafetensorsError(path + ": cannot stat: " + std::strerror(err));
  }
  std::size_t size = static_cast<std::size_t>(st.st_size);
  if (size < 8) {
    close(fd);
    throw SafetensorsError(path + ": truncated file: " + std::to_string(size) + " bytes, need at least 8 for the header length");
  }
  // MAP_PRIVATE + PROT_WRITE: copy-on-write, so in-place updates (training) are safe.
  void* data = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  int err = errno;
  close(fd);
  if (data == MAP_FAILED) throw SafetensorsError(path + ": mmap failed: " + std::strerror(err));
  return std::make_shared<Mapping>(data, size);
}

}  // namespace

std::string safetensors_dtype_name(c10::ScalarType dtype) {
  for (const auto& info : kDtypes) {
    if (info.type == dtype) return info.name;
  }
  throw SafetensorsError(std::string("dtype ") + c10::toString(dtype) + " has no safetensors name");
}

TensorMap safetensors_read(const std::string& path) {
  auto mapping = map_file(path);
  uint64_t header_len = 0;
  std::memcpy(&header_len, mapping->bytes(), 8);  // little-endian hosts only (x86-64, arm64)
  if (header_len > mapping->size() - 8) {
    throw SafetensorsError(path + ": truncated file: header length " + std::to_string(header_len) + " exceeds the " +
                           std::to_string(mapping->size() - 8) + " bytes after it");
  }
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(mapping->bytes() + 8, mapping->bytes() + 8 + header_len);
  } catch (const std::exception& e) {
    throw SafetensorsError(path + ": header is not valid JSON: " + e.what());
  }
  if (!header.is_object()) throw SafetensorsError(path + ": header must be a JSON object");
  const char* data = mapping->bytes() + 8 + header_len;
  uint64_t data_size = mapping->size() - 8 - header_len;

  TensorMap tensors;
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    auto fail = [&](const std::string& what) { throw SafetensorsError(path + ": tensor '" + name + "': " + what); };
    if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") || !entry.contains("data_offsets")) {
      fail("entry needs dtype, shape and data_offsets");
    }
    if (!entry["dtype"].is_string()) fail("dtype must be a string");
    const DtypeInfo* dtype = dtype_by_name(entry["dtype"].get<std::string>());
    if (!dtype) fail("unsupported dtype " + entry["dtype"].get<std::string>());
    std::vector<int64_t> shape;
    int64_t numel = 1;
    if (!entry["shape"].is_array()) fail("shape must be an array");
    for (const auto& dim : entry["shape"]) {
      if (!dim.is_number_integer() || dim.get<int64_t>() < 0) fail("shape has a negative or non-integer dimension");
      shape.push_back(dim.get<int64_t>());
      numel *= shape.back();
    }
    const auto& offsets = entry["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned()) {
      fail("data_offsets must be [begin, end] with non-negative integers");
    }
    uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
    if (begin > end || end > data_size) {
      fail("bad offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] for a data section of " +
           std::to_string(data_size) + " bytes (truncated file?)");
    }
    if (end - begin != static_cast<uint64_t>(numel * dtype->size)) {
      fail("offsets cover " + std::to_string(end - begin) + " bytes but shape and dtype need " + std::to_string(numel * dtype->size));
    }
    spans.emplace_back(begin, end);
    const char* ptr = data + begin;
    at::Tensor tensor;
    if (reinterpret_cast<uintptr_t>(ptr) % dtype->size != 0) {
      // Misaligned data (legal in the format): copy rather than view.
      tensor = at::empty(shape, at::TensorOptions().dtype(dtype->type));
      std::memcpy(tensor.data_ptr(), ptr, end - begin);
    } else {
      auto keep = mapping;
      tensor = at::from_blob(const_cast<char*>(ptr), shape, [keep](void*) {}, at::TensorOptions().dtype(dtype->type));
    }
    tensors.emplace(name, tensor);
  }
  std::sort(spans.begin(), spans.end());
  for (std::size_t span_idx = 1; span_idx < spans.size(); ++span_idx) {
    if (spans[span_idx].first < spans[span_idx - 1].second) {
      throw SafetensorsError(path + ": tensors overlap at data offset " + std::to_string(spans[span_idx].first));
    }
  }
  return tensors;
}

void safetensors_write(const std::string& path, const TensorMap& tensors, const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<at::Tensor> cpu_tensors;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    at::Tensor cpu = tensor.detach().to(at::kCPU).contiguous();
    uint64_t bytes = static_cast<uint64_t>(cpu.numel()) * cpu.element_size();
    header[name] = {{"dtype", safetensors_dtype_name(cpu.scalar_type())},
                    {"shape", cpu.sizes().vec()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    cpu_tensors.push_back(cpu);
  }
  std::string header_text = header.dump();
  // Pad with spaces so the data section starts 8-byte aligned (as HF's writer does).
  header_text.append((8 - header_text.size() % 8) % 8, ' ');
  std::string tmp_path = path + ".tmp";
  {
    std::ofstream out(tmp_path, std::ios::binary | std::ios::trunc);
    if (!out) throw SafetensorsError(path + ": cannot open for writing");
    uint64_t header_len = header_text.size();
    out.write(reinterpret_cast<const char*>(&header_len), 8);
    out.write(header_text.data(), static_cast<std::streamsize>(header_text.size()));
    for (const auto& cpu : cpu_tensors) {
      out.write(static_cast<const char*>(cpu.data_ptr()), static_cast<std::streamsize>(cpu.numel() * cpu.element_size()));
    }
    out.flush();
    if (!out) throw SafetensorsError(path + ": write failed");
  }
  if (std::rename(tmp_path.c_str(), path.c_str()) != 0) throw SafetensorsError(path + ": rename from .tmp failed: " + std::strerror(errno));
}

TensorMap checkpoint_read(const std::string& dir) {
  std::string single = dir + "/model.safetensors";
  std::string index_path = dir + "/model.safetensors.index.json";
  if (access(single.c_str(), F_OK) == 0) return safetensors_read(single);
  std::ifstream index_in(index_path);
  if (!index_in) throw SafetensorsError(dir + ": no model.safetensors or model.safetensors.index.json");
  nlohmann::json index;
  try {
    index = nlohmann::json::parse(index_in);
  } catch (const std::exception& e) {
    throw SafetensorsError(index_path + ": not valid JSON: " + e.what());
  }
  if (!index.contains("weight_map") || !index["weight_map"].is_object()) {
    throw SafetensorsError(index_path + ": needs an object 'weight_map' {tensor: shard file}");
  }
  std::map<std::string, TensorMap> shards;
  TensorMap tensors;
  for (const auto& [name, file_json] : index["weight_map"].items()) {
    std::string file = file_json.get<std::string>();
    if (file.find('/') != std::string::npos) throw SafetensorsError(index_path + ": shard name '" + file + "' must be a plain file name");
    auto shard_it = shards.find(file);
    if (shard_it == shards.end()) shard_it = shards.emplace(file, safetensors_read(dir + "/" + file)).first;
    auto tensor_it = shard_it->second.find(name);
    if (tensor_it == shard_it->second.end()) {
      throw SafetensorsError(index_path + ": tensor '" + name + "' is not in shard " + file);
    }
    tensors.emplace(name, tensor_it->second);
  }
  return tensors;
}

}  // namespace kforge::policy
