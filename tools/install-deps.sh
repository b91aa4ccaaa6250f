#!/usr/bin/env bash
# Installs the Debian packages a build needs, and only those that are missing.
# Usage: tools/install-deps.sh [build|bench]
set -euo pipefail

build_pkgs=(cmake ninja-build make g++ pkg-config libeigen3-dev zlib1g-dev libgtest-dev libopenblas-openmp-dev nlohmann-json3-dev libsqlite3-dev libboost-dev
            systemd
            dataset-fashion-mnist python3-protobuf)
bench_pkgs=(python3-torch python3-numpy libopenblas0-openmp wrk curl)

want=("${build_pkgs[@]}")
[[ ${1:-build} == bench ]] && want+=("${bench_pkgs[@]}")

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
((${#missing[@]})) || exit 0

echo "install-deps: installing ${missing[*]}"
if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing packages and not root; run as root or install: ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
