#!/usr/bin/env bash
# Builds and runs compare.cc: synced appends through halfspace's log,
# RocksDB and LevelDB. Installs Debian's librocksdb-dev and libleveldb-dev
# (the service itself needs neither). Needs `bash tests/run.sh plain` first.
set -euo pipefail
cd "$(dirname "$0")/../.."
dpkg -s librocksdb-dev libleveldb-dev > /dev/null 2>&1 ||
  apt-get -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends \
    librocksdb-dev libleveldb-dev
g++ -std=c++17 -O2 -I. -Ibuild/gen tests/storage_choice/compare.cc \
  build/libhalfspace_core.a build/libhalfspace_storage_proto.a \
  -lrocksdb -lleveldb -lprotobuf \
  $(pkg-config --libs absl_status absl_statusor absl_strings absl_str_format \
    absl_time absl_synchronization) \
  -pthread -o build/storage_choice
build/storage_choice
