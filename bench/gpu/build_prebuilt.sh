#!/usr/bin/env bash
# Builds, on this CPU machine, the GPU host's worker binaries against the PyTorch CUDA wheel
# the GPU host runs (torch 2.11.0, CUDA 13.0 on the H200s of 2026-11), and packs them as
# .devcarry/prebuilt.tar.xz for run_device.sh's `prebuilt` stage. A fresh GPU host took 569 s
# of device time to build (2026-11-28, 32 cores); on two cores here it takes about half an
# hour of wall time and no device time.
#
# Usage: bash bench/gpu/build_prebuilt.sh [TARGET...]
#   TARGETS  default: the binaries bench/kernelbench/run.py and kforge-worker check need, plus
#            the Triton-interpreter and gpu-labelled test binaries run_device.sh's gtest stage runs
#   TORCH_SITE  a folder holding torch/ (include, lib, share) and nvidia/nccl from the wheels;
#            default .cache/torch-wheel/site, filled from PyPI on first use (about 1 GB)
#   TORCH_VERSION  default 2.11.0 (must match the GPU host's: its libtorch is what loads)
# The binaries find the host's libtorch through LD_LIBRARY_PATH, which the prebuilt stage sets.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
version=${TORCH_VERSION:-2.11.0}
site=${TORCH_SITE:-$root/.cache/torch-wheel/site}
build=$root/build-gpu
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(kforge-worker kforge-codegen kforge-sandbox kforge-jail kforge-probe
                                     kforge-train codegen_window_test codegen_triton_run_test train_distributed_test
                                     codegen_gpu_test harness_cuda_backend_test harness_inductor_harvest_gpu_test)

fetch() {  # wheels from PyPI, unpacked into $site
  local wheels
  wheels=$(mktemp -d)
  echo "build_prebuilt: downloading $* into $site"
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_18_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$wheels" "$@"
  mkdir -p "$site"
  for w in "$wheels"/*.whl; do python3 -m zipfile -e "$w" "$site"; done
  rm -rf "$wheels"
}
[ -d "$site/torch/lib" ] || fetch "torch==$version"
# NCCL's header must be the version this torch was built with: its version macros change the
# layout of c10d's NCCL options (a 2.31 header against torch 2.11's pinned 2.28.9 built a
# kforge-train whose NCCL ranks died at exit on the H200s, 2026-11-28).
nccl_pin=$(grep -h -o -E 'nvidia-nccl-cu[0-9]+==[0-9.]+' "$site"/torch-*.dist-info/METADATA | head -1)
[ -n "$nccl_pin" ] || { echo "build_prebuilt: the torch wheel's METADATA names no nvidia-nccl pin" >&2; exit 1; }
grep -q -x "Version: ${nccl_pin#*==}" "$site"/nvidia_nccl_*.dist-info/METADATA 2>/dev/null || {
  rm -rf "$site"/nvidia/nccl "$site"/nvidia_nccl_*.dist-info
  fetch "$nccl_pin"
}

lib=$site/torch/lib
mkdir -p "$build"
# TorchConfig searches the system's paths before its own: Debian's CPU libtorch would win.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKFORGE_WITH_HTTP=OFF -DKFORGE_BUILD_TESTS=ON \
  -DKFORGE_RUNNER_DEVICE=cuda -DKFORGE_WITH_GLOO=OFF -DCMAKE_PREFIX_PATH="$site/torch/share/cmake" \
  -DTORCH_LIBRARY="$lib/libtorch.so" -Dc10_LIBRARY="$lib/libc10.so" -Dtorch_cpu_LIBRARY="$lib/libtorch_cpu.so" \
  -Dtorch_cuda_LIBRARY="$lib/libtorch_cuda.so" -Dc10_cuda_LIBRARY="$lib/libc10_cuda.so" \
  -DC10_CUDA_LIBRARY="$lib/libc10_cuda.so" -DCAFFE2_NVRTC_LIBRARY="$lib/libcaffe2_nvrtc.so" \
  -DCMAKE_EXE_LINKER_FLAGS="-Wl,--allow-shlib-undefined" > "$build/configure.log" 2>&1 ||
  { tail -30 "$build/configure.log"; exit 1; }
# KFORGE_WITH_GLOO=OFF: the wheel has no gloo headers, and Debian's would mix two gloo versions.
# --allow-shlib-undefined: libtorch_cuda's own CUDA wheels (cuDNN, cuBLAS...) are not here; the
# GPU host resolves them when the binary loads.
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin"
cp -a "$build/bin/runner" "$stage/bin/"
for t in "${targets[@]}"; do
  f=$(find "$build" -maxdepth 3 -type f -name "$t" -perm -u+x | head -1)
  [ -n "$f" ] || { echo "build_prebuilt: no binary $t under $build" >&2; exit 1; }
  mkdir -p "$stage/$(dirname "${f#$build/}")"
  strip -o "$stage/${f#$build/}" "$f"
done
echo "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo '+changes'), torch $version, built $(date -u +%FT%TZ)" \
  > "$stage/PREBUILT"
mkdir -p .devcarry
tar -C "$stage" -cJf .devcarry/prebuilt.tar.xz .
ls -la .devcarry/prebuilt.tar.xz
