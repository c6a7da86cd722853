// c10d process groups behind worker/train/distributed.h. The only translation unit that
// includes c10d's headers: built with gloo when CMake finds gloo's headers (Debian:
// libgloo-dev; PyTorch's own builds ship them), with NCCL when CMake's probe compiles and
// links ProcessGroupNCCL against a CUDA libtorch and NCCL's header (a PyTorch wheel's
// nvidia-nccl package); a run asking for a backend the build lacks says what is missing.
// Tests: scripts/test.sh build -R train_distributed (the NCCL one on a host with 2 GPUs).
#include "worker/train/distributed.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <stdexcept>

#include "common/config.h"

#if defined(KFORGE_WITH_GLOO) || defined(KFORGE_WITH_NCCL)
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif
#ifdef KFORGE_WITH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef KFORGE_WITH_NCCL
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace kforge::train {

std::string DistributedConfig::validate() const {
  if (world_size < 1) return "world_size must be >= 1";
  if (rank < 0 || rank >= world_size) return "rank must be in 0.." + std::to_string(world_size - 1);
  if (world_size > 1 && store.rfind("tcp://", 0) != 0 && store.rfind("file://", 0) != 0) {
    return "dist_store must be tcp://host:port or file:///path (got '" + store + "')";
  }
  if (timeout_s < 1) return "timeout_s must be >= 1";
  if (!backend.empty() && backend != "gloo" && backend != "nccl")
    return "dist_backend must be gloo or nccl (got '" + backend + "')";
  if (local_rank < 0) return "local_rank must be >= 0";
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
  config.backend = env_or("KFORGE_DIST_BACKEND", "");
  config.local_rank = std::stoi(env_or("KFORGE_LOCAL_RANK", env_or("LOCAL_RANK", std::to_string(config.rank))));
  return config;
}

std::string DistributedConfig::backend_for(const std::string& device) const {
  if (!backend.empty()) return backend;
  return device.rfind("cuda", 0) == 0 && distributed_has("nccl") ? "nccl" : "gloo";
}

std::string DistributedConfig::rank_device(const std::string& device) const {
  return enabled() && device == "cuda" ? "cuda:" + std::to_string(local_rank) : device;
}

std::vector<std::string> distributed_backends() {
  std::vector<std::string> backends;
#ifdef KFORGE_WITH_GLOO
  backends.push_back("gloo");
#endif
#ifdef KFORGE_WITH_NCCL
  backends.push_back("nccl");
#endif
  return backends;
}

bool distributed_has(const std::string& backend) {
  auto have = distributed_backends();
  return std::find(have.begin(), have.end(), backend) != have.end();
}

std::pair<size_t, size_t> shard_range(size_t count, int rank, int world_size) {
  size_t base = count / world_size, extra = count % world_size;
  size_t r = static_cast<size_t>(rank);
  size_t first = r * base + std::min(r, extra);
  return {first, first + base + (r < extra ? 1 : 0)};
}

// The collectives a backend runs, on tensors of `device` (the CPU for gloo, this rank's GPU
// for nccl): the callers move their tensors there and back.
struct DataParallel::Impl {
  DistributedConfig config;
  std::string backend;
  at::Device device = at::kCPU;
  std::function<void(std::vector<at::Tensor>&)> allreduce;  // in-place sum
  std::function<void(std::vector<at::Tensor>&)> broadcast;  // in place, from rank 0
  std::function<void()> shutdown;                           // nccl: ends the communicators at exit
};

namespace {

#if defined(KFORGE_WITH_GLOO) || defined(KFORGE_WITH_NCCL)
// The rendezvous store of `config`; `host` gets the TCP store's host ("127.0.0.1" for a file).
c10::intrusive_ptr<c10d::Store> make_store(const DistributedConfig& config, std::chrono::milliseconds timeout,
                                           std::string& host) {
  c10::intrusive_ptr<c10d::Store> store;
  host = "127.0.0.1";
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
  return store;
}

using Collective = std::function<void(std::vector<at::Tensor>&)>;

// Binds a process group's all-reduce and broadcast (the group lives as long as they do).
template <typename Group>
void bind_collectives(c10::intrusive_ptr<Group> group, Collective& allreduce, Collective& broadcast) {
  allreduce = [group](std::vector<at::Tensor>& tensors) { group->allreduce(tensors)->wait(); };
  broadcast = [group](std::vector<at::Tensor>& tensors) { group->broadcast(tensors)->wait(); };
}
#endif

}  // namespace

DataParallel::DataParallel(const DistributedConfig& config, const std::string& backend) : impl_(new Impl) {
  impl_->config = config;
  impl_->backend = backend;
  if (auto error = config.validate(); !error.empty()) throw std::runtime_error("distributed: " + error);
  if (!distributed_has(backend)) {
    auto have = distributed_backends();
    std::string built = have.empty() ? "none" : have.front() + (have.size() > 1 ? ", " + have.back() : "");
    throw std::runtime_error("distributed: this build has no c10d " + backend + " process group (it has: " + built +
                             "); gloo needs gloo's headers (libgloo-dev on Debian), nccl a CUDA libtorch and nccl.h "
                             "(docs/training.md \"Data-parallel training\")");
  }
#if defined(KFORGE_WITH_GLOO) || defined(KFORGE_WITH_NCCL)
  auto timeout = std::chrono::milliseconds(static_cast<int64_t>(config.timeout_s) * 1000);
  std::string host;
  auto store = make_store(config, timeout, host);
#endif
#ifdef KFORGE_WITH_NCCL
  if (backend == "nccl") {
    // One GPU per rank: this process's current device, where every collective's tensors live.
    c10::cuda::set_device(static_cast<c10::DeviceIndex>(config.local_rank));
    impl_->device = at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(config.local_rank));
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = timeout;
    auto group = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, config.rank, config.world_size, options);
    bind_collectives(group, impl_->allreduce, impl_->broadcast);
    // A ProcessGroupNCCL destroyed without shutdown() warns, and its watchdog can outlive main.
    impl_->shutdown = [group] { group->shutdown(); };
    return;
  }
#endif
#ifdef KFORGE_WITH_GLOO
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
  bind_collectives(c10::make_intrusive<c10d::ProcessGroupGloo>(store, config.rank, config.world_size, options),
                   impl_->allreduce, impl_->broadcast);
#endif
}

void DataParallel::allreduce_grads(const std::vector<at::Tensor>& parameters) {
  std::vector<at::Tensor> pieces;
  for (const auto& param : parameters) {
    at::Tensor grad = param.grad();
    pieces.push_back(grad.defined() ? grad.detach().reshape(-1) : at::zeros({param.numel()}, param.options()));
  }
  // One flat buffer on the backend's device: one collective per step, not one per parameter.
  std::vector<at::Tensor> flat{at::cat(pieces).to(impl_->device)};
  impl_->allreduce(flat);
  int64_t offset = 0;
  for (const auto& param : parameters) {
    at::Tensor summed = flat[0].narrow(0, offset, param.numel()).view(param.sizes()).to(param.device());
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
  std::vector<at::Tensor> tensors{at::tensor(values, at::TensorOptions().dtype(at::kDouble)).to(impl_->device)};
  impl_->allreduce(tensors);
  at::Tensor sums = tensors[0].to(at::kCPU);
  return {sums.data_ptr<double>(), sums.data_ptr<double>() + sums.numel()};
}

void DataParallel::broadcast_parameters(const std::vector<at::Tensor>& parameters) {
  c10::NoGradGuard no_grad;
  for (const auto& param : parameters) {
    std::vector<at::Tensor> tensors{param.detach().to(impl_->device).contiguous()};
    impl_->broadcast(tensors);
    param.detach().copy_(tensors[0]);
  }
}

DataParallel::~DataParallel() {
  if (impl_ && impl_->shutdown) {
    try {
      impl_->shutdown();
    } catch (const std::exception&) {  // a destructor never throws; the process is ending anyway
    }
  }
}
int DataParallel::rank() const { return impl_->config.rank; }
int DataParallel::world_size() const { return impl_->config.world_size; }
const std::string& DataParallel::backend() const { return impl_->backend; }

}  // namespace kforge::train
