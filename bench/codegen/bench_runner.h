// The codegen benchmark: every suite op through the teacher compiler, autotuned on
// this device, verified against the reference and timed against libtorch eager.
// Run: bench/codegen/run.sh (writes bench/results/codegen.json).
#pragma once

namespace kforge::bench {

//! `kforge-codegen bench [--suite DIR] [--filter SUBSTR] [--max-schedules N] [--out FILE]`; returns the exit code.
int run_codegen_bench(int argc, char** argv);

//! `kforge-codegen blas [THREADS]`: eager 1024^3 matmul GFLOP/s through the harness baseline path, as JSON.
int run_blas_probe(int argc, char** argv);

}  // namespace kforge::bench
