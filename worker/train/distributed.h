// Data-parallel training over libtorch's distributed process groups (c10d): processes
// meet through a TCPStore or FileStore, then gradients and metrics are all-reduced
// with gloo (CPU tensors, or CUDA tensors through host copies). Docs: docs/training.md
// "Data-parallel training". Test: scripts/test.sh build -R train_distributed_test.
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
  int timeout_s = 300; //!< rendezvous and collective timeout

  bool enabled() const { return world_size > 1; }
  //! Empty when valid, else a message naming the bad field.
  std::string validate() const;
  //! KFORGE_RANK, KFORGE_WORLD_SIZE, KFORGE_DIST_STORE, KFORGE_DIST_IFACE; torchrun's RANK,
  //! WORLD_SIZE, MASTER_ADDR and MASTER_PORT when those are unset.
  static DistributedConfig from_env();
};

//! True when this build can form a gloo process group (libtorch's c10d and gloo headers).
bool distributed_available();

//! A joined gloo process group. Collectives block until every rank calls them, in the
//! same order, with tensors of the same shapes.
class DataParallel {
 public:
  //! Rendezvous; throws std::runtime_error when the store or a peer cannot be reached in
  //! time, or this build has no gloo (distributed_available()).
  explicit DataParallel(const DistributedConfig& config);
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  int rank() const;
  int world_size() const;
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
