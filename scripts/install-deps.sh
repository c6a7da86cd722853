#!/usr/bin/env bash
# Installs kforge's build and run dependencies from Debian packages.
# Idempotent: prints nothing and touches nothing when everything is installed.
# Usage: scripts/install-deps.sh               (as root, or with sudo available)
#        scripts/install-deps.sh --gpu-worker  only what a GPU worker builds with (docker/Dockerfile.worker-cuda:
#                                              PyTorch, Triton and CUDA come from its base image and pip)
set -euo pipefail

# A GPU worker (-DKFORGE_WITH_HTTP=OFF, docs/gpu.md) needs these; everything else needs them too.
gpu_worker_packages=(
  build-essential cmake ninja-build ccache pkg-config git python3-venv
  libssl-dev zlib1g-dev libpqxx-dev
  ocl-icd-opencl-dev opencl-headers clinfo
  nlohmann-json3-dev libgtest-dev libgmock-dev
)
packages=(
  "${gpu_worker_packages[@]}"
  libtorch-dev python3-torch
  libgloo-dev  # c10d gloo headers: data-parallel training (worker/train/distributed.h, train_distributed_test)
  libcpprest-dev
  postgresql postgresql-contrib
  pocl-opencl-icd
  wrk curl procps
  libopenblas0-pthread  # takes over libblas.so.3 (update-alternatives priority 100 > netlib 10): a fair eager matmul baseline
  # web UI: charts and code highlighting served by kforge-server at /vendor/ (docs/web.md
  # records the versions: Chart.js 3.9.1, highlight.js 9.18.5 on Debian 12)
  libjs-chart.js libjs-highlight.js
  # the browser test (tests/web): headless Chromium driven by Selenium
  chromium chromium-driver python3-selenium
  # tests/docker/compose_check.py reads docker/compose.yaml
  python3-yaml
)
[ "${1:-}" = "--gpu-worker" ] && packages=("${gpu_worker_packages[@]}")

missing=()
for pkg in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
