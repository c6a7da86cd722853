// The worker's queue flags (slots, queue, lease, poll, batches, backoff...) as
// one table, so kforge-worker and test/bench workers parse them the same way.
// Tests: ctest -R 'worker_(jobs|cluster)_test' start workers with these flags.
#pragma once

#include <vector>

#include "common/config.h"
#include "worker/worker.h"

namespace kforge::worker {

//! Flag specs for WorkerOptions (append to a binary's own table).
std::vector<FlagSpec> worker_flag_specs();

//! Fills the queue fields of `options` from parsed flags; throws
//! std::invalid_argument naming the flag when a value is out of range.
void apply_worker_flags(const Flags& flags, WorkerOptions& options);

//! "target:opencl, device:cpu" -> {"target:opencl", "device:cpu"} (commas or spaces).
std::vector<std::string> split_tags(const std::string& text);

}  // namespace kforge::worker
