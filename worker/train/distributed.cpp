// c10d process groups behind worker/train/distributed.h. The only translation unit that
// includes c10d's headers; built with gloo when CMake finds gloo's headers (Debian:
// libgloo-dev; PyTorch wheels ship them), else every DataParallel says what is missing.
// Test: scripts/test.sh build -R train_distributed_test.
#include "worker/train/distributed.h"

#include <ATen/ATen.h>

#include <chrono>
#include <stdexcept>

#include "common/config.h"

#ifdef KFORGE_WITH_GLOO
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif

namespace kforge::train {

std::string DistributedConfig::validate() const {
  if (world_size < 1) return "world_size must be >= 1";
  if (rank < 0 || rank >= world_size) return "rank must be in 0.." + std::to_string(world_size - 1);
  if (world_size > 1 && store.rfind("tcp://", 0) != 0 && store.rfind("file://", 0) != 0) {
    return "dist_store must be tcp://host:port or file:///path (got '" + store + "')";
  }
  if (timeout_s < 1) return "timeout_s must be >= 1";
  return "";
}

DistributedConfig DistributedConfig::from_env() {
  DistributedConfig config;
  config.rank = std::stoi(env_or("KFORGE_RANK", env_or("RANK", "0")));
  config.world_size = std::stoi(env_or("KFORGE_WORLD_SIZE", env_or("WORLD_SIZE", "1")));
  config.store = env_or("KFORGE_DIST_STORE", "");
  if (config.store.empty() && !env_or("MASTER_ADDR", "").empty()) {
    config.store = "tcp://" + env_or("MASTER_ADDR", "") + ":" + env_or("MASTER_PORT", "29500");
  }
  config.iface = env_or("KFORGE_DIST_IFACE", "");
  return config;
}

std::pair<size_t, size_t> shard_range(size_t count, int rank, int world_size) {
  size_t base = count / world_size, extra = count % world_size;
  size_t r = static_cast<size_t>(rank);
  size_t first = r * base + std::min(r, extra);
  return {first, first + base + (r < extra ? 1 : 0)};
}

#ifdef KFORGE_WITH_GLOO

bool distributed_available() { return true; }

struct DataParallel::Impl {
  DistributedConfig config;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group;

  void allreduce(at::Tensor& tensor) {
    std::vector<at::Tensor> tensors{tensor};
    group->allreduce(tensors)->wait();
  }
};

DataParallel::DataParallel(const DistributedConfig& config) : impl_(new Impl{config, {}}) {
  if (auto error = config.validate(); !error.empty()) throw std::runtime_error("distributed: " + error);
  auto timeout = std::chrono::milliseconds(static_cast<int64_t>(config.timeout_s) * 1000);
  c10::intrusive_ptr<c10d::Store> store;
  std::string host = "127.0.0.1";
  if (config.store.rfind("file://", 0) == 0) {
    store = c10::make_intrusive<c10d::FileStore>(config.store.substr(7), config.world_size);
  } else {
    std::string address = config.store.substr(6);
    auto colon = address.rfind(':');
    if (colon == std::string::npos) throw std::runtime_error("distributed: dist_store " + config.store + " has no port");
    host = address.substr(0, colon);
    c10d::TCPStoreOptions options;
    options.port = static_cast<uint16_t>(std::stoi(address.substr(colon + 1)));
    options.isServer = config.rank == 0;
    options.numWorkers = config.world_size;
    options.waitWorkers = true;
    options.timeout = timeout;
    store = c10::make_intrusive<c10d::TCPStore>(host, options);
  }
  store->setTimeout(timeout);
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  // Each rank binds an address its peers can reach: a named interface, loopback when the
  // store is local (one host), else the address this host's name resolves to.
  bool local = host == "127.0.0.1" || host == "localhost";
  if (!config.iface.empty()) {
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(config.iface));
  } else if (local) {
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  } else {
    options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  }
  impl_->group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, config.rank, config.world_size, options);
}

void DataParallel::allreduce_grads(const std::vector<at::Tensor>& parameters) {
  std::vector<at::Tensor> pieces;
  for (const auto& param : parameters) {
    at::Tensor grad = param.grad();
    pieces.push_back(grad.defined() ? grad.detach().reshape(-1) : at::zeros({param.numel()}, param.options()));
  }
  // One flat buffer on the CPU: one collective per step, not one per parameter.
  at::Tensor flat = at::cat(pieces).to(at::kCPU);
  impl_->allreduce(flat);
  int64_t offset = 0;
  for (const auto& param : parameters) {
    at::Tensor summed = flat.narrow(0, offset, param.numel()).view(param.sizes()).to(param.device());
    offset += param.numel();
    at::Tensor grad = param.grad();
    if (grad.defined()) {
      grad.copy_(summed);
    } else {
      param.mutable_grad() = summed.clone();
    }
  }
}

std::vector<double> DataParallel::allreduce_sum(const std::vector<double>& values) {
  at::Tensor tensor = at::tensor(values, at::TensorOptions().dtype(at::kDouble));
  impl_->allreduce(tensor);
  return {tensor.data_ptr<double>(), tensor.data_ptr<double>() + tensor.numel()};
}

void DataParallel::broadcast_parameters(const std::vector<at::Tensor>& parameters) {
  c10::NoGradGuard no_grad;
  for (const auto& param : parameters) {
    std::vector<at::Tensor> tensors{param.detach().to(at::kCPU).contiguous()};
    impl_->group->broadcast(tensors)->wait();
    param.detach().copy_(tensors[0]);
  }
}

#else

bool distributed_available() { return false; }

struct DataParallel::Impl {
  DistributedConfig config;
};

DataParallel::DataParallel(const DistributedConfig& config) : impl_(new Impl{config}) {
  throw std::runtime_error(
      "distributed: this build has no c10d gloo process group (CMake found no gloo headers: install libgloo-dev "
      "on Debian, or build against PyTorch's libtorch)");
}

void DataParallel::allreduce_grads(const std::vector<at::Tensor>&) {}
std::vector<double> DataParallel::allreduce_sum(const std::vector<double>& values) { return values; }
void DataParallel::broadcast_parameters(const std::vector<at::Tensor>&) {}

#endif

DataParallel::~DataParallel() = default;
int DataParallel::rank() const { return impl_->config.rank; }
int DataParallel::world_size() const { return impl_->config.world_size; }

}  // namespace kforge::train
