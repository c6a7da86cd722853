// Data-parallel training over libtorch's distributed process groups (c10d): processes
// meet through a TCPStore or FileStore, then gradients and metrics are all-reduced
// with gloo (CPU tensors, or CUDA tensors through host copies) or NCCL (CUDA tensors in
// place, one GPU per rank). Docs: docs/training.md "Data-parallel training".
// Tests: scripts/test.sh build -R train_distributed (the NCCL one on a host with 2 GPUs).
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kforge::train {

//! Where this process sits in a data-parallel run and how the processes meet.
struct DistributedConfig {
  int rank = 0;        //!< 0 .. world_size-1; rank 0 hosts a tcp:// store and writes checkpoints
  int world_size = 1;  //!< processes in the run; 1 = no process group
  //! "tcp://host:port" (rank 0 listens on port, the others connect to host) or
  //! "file:///path" (a file every process can reach, e.g. on a shared file system).
  std::string store;
  std::string iface;   //!< network interface gloo binds (KFORGE_DIST_IFACE); empty: by hostname, loopback for a local store
  //! "gloo", "nccl", or empty: nccl when training on CUDA and this build has it, else gloo
  //! (KFORGE_DIST_BACKEND).
  std::string backend;
  //! This process's GPU on its host for nccl and --device cuda (KFORGE_LOCAL_RANK, else
  //! torchrun's LOCAL_RANK, else rank).
  int local_rank = 0;
  int timeout_s = 300; //!< rendezvous and collective timeout

  bool enabled() const { return world_size > 1; }
  //! Empty when valid, else a message naming the bad field.
  std::string validate() const;
  //! KFORGE_RANK, KFORGE_WORLD_SIZE, KFORGE_DIST_STORE, KFORGE_DIST_IFACE,
  //! KFORGE_DIST_BACKEND, KFORGE_LOCAL_RANK; torchrun's RANK, WORLD_SIZE, LOCAL_RANK,
  //! MASTER_ADDR and MASTER_PORT when those are unset.
  static DistributedConfig from_env();
  //! The backend a run on `device` ("cpu", "cuda", "cuda:1") uses: `backend` when set,
  //! else nccl for a CUDA device when this build has it, else gloo.
  std::string backend_for(const std::string& device) const;
  //! The device this rank trains on: a plain "cuda" becomes "cuda:<local_rank>" in a
  //! data-parallel run (one GPU per process); anything else is kept.
  std::string rank_device(const std::string& device) const;
};

//! The process-group backends this build has: "gloo" (libtorch's c10d with gloo's
//! headers), "nccl" (a CUDA libtorch with ProcessGroupNCCL and nccl.h); may be empty.
std::vector<std::string> distributed_backends();
//! True when `backend` is among distributed_backends().
bool distributed_has(const std::string& backend);

//! A joined process group (gloo or nccl). Collectives block until every rank calls them,
//! in the same order, with tensors of the same shapes.
class DataParallel {
 public:
  //! Rendezvous with `backend` (DistributedConfig::backend_for); nccl binds this process to
  //! cuda:<local_rank>. Throws std::runtime_error when the store or a peer cannot be reached
  //! in time, or this build lacks the backend (distributed_backends()).
  DataParallel(const DistributedConfig& config, const std::string& backend);
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  int rank() const;
  int world_size() const;
  const std::string& backend() const;
  //! Sums the gradients of `parameters` over the processes in one flattened all-reduce
  //! (a parameter without a gradient contributes zeros and gets the sum).
  void allreduce_grads(const std::vector<at::Tensor>& parameters);
  //! Element-wise sum of `values` over the processes.
  std::vector<double> allreduce_sum(const std::vector<double>& values);
  //! Overwrites every process's `parameters` with rank 0's values.
  void broadcast_parameters(const std::vector<at::Tensor>& parameters);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

//! This rank's contiguous part [first, last) of `count` items split over world_size
//! ranks (the first count % world_size ranks take one more).
std::pair<size_t, size_t> shard_range(size_t count, int rank, int world_size);

}  // namespace kforge::train
