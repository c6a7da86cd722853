// safetensors: round trip of every dtype, copy-on-write mapping, and malformed files
// rejected with messages naming the fault. Run: scripts/test.sh build -R policy
#include "worker/policy/safetensors.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/worker/policy/policy_test_util.h"

namespace kp = kforge::policy;

namespace {

void write_raw(const std::string& path, const std::string& header, const std::string& data, int64_t header_len_override = -1) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  uint64_t len = header_len_override >= 0 ? static_cast<uint64_t>(header_len_override) : header.size();
  out.write(reinterpret_cast<const char*>(&len), 8);
  out << header << data;
}

std::string read_error(const std::string& path) {
  try {
    kp::safetensors_read(path);
  } catch (const kp::SafetensorsError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Safetensors, RoundTripsEveryDtypeBitExact) {
  kforge::test::TempDir dir;
  kp::TensorMap tensors;
  at::Tensor base = at::randn({3, 5});
  tensors["f32"] = base;
  tensors["f64"] = base.to(at::kDouble);
  tensors["f16"] = base.to(at::kHalf);
  tensors["bf16"] = base.to(at::kBFloat16);
  tensors["i64"] = at::arange(-7, 8, at::kLong).view({3, 5});
  tensors["i32"] = at::arange(-7, 8, at::kInt);
  tensors["i8"] = at::arange(-7, 8, at::kChar);
  tensors["u8"] = at::arange(0, 15, at::kByte);
  tensors["bool"] = base > 0;
  tensors["scalar"] = at::scalar_tensor(3.5);
  tensors["empty"] = at::zeros({0, 4});
  tensors["strided"] = base.t();  // non-contiguous input is written contiguous
  kp::safetensors_write(dir.path + "/a.safetensors", tensors);
  kp::TensorMap back = kp::safetensors_read(dir.path + "/a.safetensors");
  ASSERT_EQ(back.size(), tensors.size());
  for (const auto& [name, tensor] : tensors) {
    ASSERT_TRUE(back.count(name)) << name;
    EXPECT_EQ(back[name].scalar_type(), tensor.scalar_type()) << name;
    EXPECT_EQ(back[name].sizes(), tensor.sizes()) << name;
    EXPECT_TRUE(at::equal(back[name], tensor)) << name;
  }
}

TEST(Safetensors, LoadedTensorsAreCopyOnWrite) {
  kforge::test::TempDir dir;
  std::string path = dir.path + "/w.safetensors";
  kp::safetensors_write(path, {{"w", at::ones({4})}});
  at::Tensor loaded = kp::safetensors_read(path)["w"];
  loaded.mul_(5);  // must not reach the file
  EXPECT_FLOAT_EQ(loaded[0].item<float>(), 5.f);
  EXPECT_FLOAT_EQ(kp::safetensors_read(path)["w"][0].item<float>(), 1.f);
}

TEST(Safetensors, HeaderIsPaddedSoDataIsAligned) {
  kforge::test::TempDir dir;
  std::string path = dir.path + "/w.safetensors";
  kp::safetensors_write(path, {{"odd_name", at::ones({3}, at::kDouble)}});
  std::ifstream in(path, std::ios::binary);
  uint64_t header_len = 0;
  in.read(reinterpret_cast<char*>(&header_len), 8);
  EXPECT_EQ(header_len % 8, 0u);
}

TEST(Safetensors, MalformedFilesNameTheFault) {
  kforge::test::TempDir dir;
  std::string path = dir.path + "/bad.safetensors";
  std::string good_header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  std::string eight(8, '\0');

  { std::ofstream(path, std::ios::binary) << "abc"; }
  EXPECT_NE(read_error(path).find("truncated file"), std::string::npos) << read_error(path);

  write_raw(path, good_header, eight, 1 << 20);
  EXPECT_NE(read_error(path).find("header length"), std::string::npos) << read_error(path);

  write_raw(path, "{not json", eight);
  EXPECT_NE(read_error(path).find("not valid JSON"), std::string::npos) << read_error(path);

  write_raw(path, good_header, std::string(4, '\0'));  // data cut short
  EXPECT_NE(read_error(path).find("bad offsets"), std::string::npos) << read_error(path);

  write_raw(path, R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight);
  EXPECT_NE(read_error(path).find("shape and dtype need 12"), std::string::npos) << read_error(path);

  write_raw(path, R"({"w":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", eight);
  EXPECT_NE(read_error(path).find("unsupported dtype F8_E4M3"), std::string::npos) << read_error(path);

  write_raw(path, R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", eight);
  EXPECT_NE(read_error(path).find("overlap"), std::string::npos) << read_error(path);

  write_raw(path, R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", eight);
  EXPECT_NE(read_error(path).find("negative"), std::string::npos) << read_error(path);

  write_raw(path, R"({"w":{"dtype":"F32","shape":[2]}})", eight);
  EXPECT_NE(read_error(path).find("'w'"), std::string::npos) << read_error(path);

  EXPECT_NE(read_error(dir.path + "/missing.safetensors").find("cannot open"), std::string::npos);
}

TEST(Safetensors, ShardedCheckpointFollowsTheIndex) {
  kforge::test::TempDir dir;
  kp::safetensors_write(dir.path + "/model-00001-of-00002.safetensors", {{"a", at::ones({2})}});
  kp::safetensors_write(dir.path + "/model-00002-of-00002.safetensors", {{"b", at::full({3}, 2.0)}});
  std::ofstream(dir.path + "/model.safetensors.index.json")
      << R"({"metadata":{},"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}})";
  kp::TensorMap tensors = kp::checkpoint_read(dir.path);
  ASSERT_EQ(tensors.size(), 2u);
  EXPECT_TRUE(at::equal(tensors["b"], at::full({3}, 2.0)));

  std::ofstream(dir.path + "/model.safetensors.index.json")
      << R"({"weight_map":{"a":"model-00002-of-00002.safetensors"}})";
  try {
    kp::checkpoint_read(dir.path);
    FAIL() << "expected an error for a tensor missing from its shard";
  } catch (const kp::SafetensorsError& e) {
    EXPECT_NE(std::string(e.what()).find("'a' is not in shard"), std::string::npos) << e.what();
  }
}
