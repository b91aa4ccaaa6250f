#!/usr/bin/env bash
# Installs the Debian packages a build needs, and only those that are missing; then the
# dashboard's npm packages (uPlot; playwright-core for its browser test, onnxruntime-node for the
# ONNX export test) into web/node_modules from web/package-lock.json, when they are missing or
# older than the lock file.
# Usage: tools/install-deps.sh [build|bench|clang]
set -euo pipefail

# libopenblas-openmp-dev: bench/gemm_shapes compares the engine's products with OpenBLAS's.
# python3-numpy: the dataset tests read files that real NumPy wrote, written at test time.
# python3-onnx: the ONNX export test checks every exported file with onnx.checker.
# lld: the linker of every build (CMakeLists.txt, TRAININGD_LLD).
build_pkgs=(cmake ninja-build make g++ lld pkg-config clang-format libeigen3-dev zlib1g-dev libgtest-dev libopenblas-openmp-dev nlohmann-json3-dev libsqlite3-dev libboost-dev
            openmpi-bin libopenmpi-dev iproute2 procps
            slurm-wlm munge
            systemd
            dataset-fashion-mnist python3-protobuf
            python3-numpy python3-onnx
            chromium)
# python3-sklearn: bench/tables_bench.py (real tables and scikit-learn's baselines on the same split);
# r-cran-cardata: its --categorical tables (carData's, exported with Rscript).
bench_pkgs=(python3-torch python3-numpy python3-sklearn r-cran-cardata libopenblas0-openmp wrk curl)
# The clang builds (ASan, ThreadSanitizer and fuzz): clang and its runtimes (libFuzzer and the
# sanitizers are in libclang-rt-14-dev).
clang_pkgs=(clang-14 libclang-rt-14-dev)

want=("${build_pkgs[@]}")
[[ ${1:-build} == bench ]] && want+=("${bench_pkgs[@]}")
[[ ${1:-build} == clang ]] && want+=("${clang_pkgs[@]}")
# Node and npm from Debian only when there are none (a newer Node installed otherwise is fine).
command -v node >/dev/null || want+=(nodejs)
command -v npm >/dev/null || want+=(npm)

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then
    echo "install-deps: missing packages and not root; run as root or install: ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# npm writes node_modules/.package-lock.json on every install: older than the lock file means the
# lock file changed since.
web="$(cd "$(dirname "${BASH_SOURCE[0]}")/../web" && pwd)"
if [[ ! -f $web/node_modules/.package-lock.json || $web/package-lock.json -nt $web/node_modules/.package-lock.json ]]; then
  echo "install-deps: npm ci in $web"
  # onnxruntime-node (the ONNX export test's runtime) ships its CPU library; without this its
  # install script would download CUDA binaries.
  ONNXRUNTIME_NODE_INSTALL=skip npm ci --prefix "$web" --no-audit --no-fund
fi
