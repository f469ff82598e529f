#!/usr/bin/env bash
# Installs what halfspace needs from Debian 12 (only what is missing) and
# builds it.
#
#   bash deploy/build.sh [TARGET...]
#
# Environment: BUILD_DIR (default build), SANITIZE (address or thread),
# BUILD_TYPE (default RelWithDebInfo), EXTRA_PACKAGES (more Debian packages
# to install, e.g. what the tests need).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(g++ make cmake pkg-config libgrpc++-dev protobuf-compiler-grpc
          libprotobuf-dev protobuf-compiler libabsl-dev libspdlog-dev
          libgtest-dev libgmock-dev libbenchmark-dev grpc-proto
          prometheus-cpp-dev libnats-dev libboost-dev
          ${EXTRA_PACKAGES:-})
bash deploy/install_packages.sh "${packages[@]}"

build_dir=${BUILD_DIR:-build}
mkdir -p "$build_dir"
log="$build_dir/configure.log"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" \
  -DHALFSPACE_SANITIZE="${SANITIZE:-}" > "$log" 2>&1 || { cat "$log"; exit 1; }
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j"$(nproc)" "${targets[@]}"
