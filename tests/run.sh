#!/usr/bin/env bash
# Builds and runs the test suite.
#
#   bash tests/run.sh            all of it: plain build, then ASan+UBSan, then TSan
#   bash tests/run.sh plain      the plain build only (the quick loop)
#   bash tests/run.sh asan|tsan  one sanitizer build only
set -euo pipefail
cd "$(dirname "$0")/.."

# run NAME SANITIZER: build everything and run every test.
run() {
  local name=$1 sanitize=$2 dir="build${2:+-$1}"
  echo "=== $name build ==="
  BUILD_DIR="$dir" SANITIZE="$sanitize" bash deploy/build.sh
  echo "=== $name tests ==="
  ctest --test-dir "$dir" --output-on-failure -j2 --timeout 300
}

# Debian's gRPC and Abseil are not built for TSan, which then cannot see
# their synchronization and reports races in any code that gRPC hands data
# between threads. So the TSan build runs the "unit" tests: everything that
# involves no gRPC (models, registry and store under concurrency, the gate).
tsan() {
  echo "=== tsan build ==="
  BUILD_DIR=build-tsan SANITIZE=thread bash deploy/build.sh perceptron_test \
    logistic_regression_test model_test model_store_test call_gate_test \
    algorithms_test feature_space_test write_ahead_log_test limits_test
  echo "=== tsan tests ==="
  ctest --test-dir build-tsan --output-on-failure -j2 --timeout 300 -L unit
}

# buf, for the API's lint and compatibility checks, from the npm registry
# (Debian does not package it), pinned.
install_buf() {
  [ -x build-tools/node_modules/.bin/buf ] && return
  if ! command -v npm > /dev/null; then
    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get \
      -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends npm
  fi
  echo "installing buf"
  npm_config_cache="$PWD/build-tools/npm-cache" npm install --no-audit \
    --no-fund --loglevel=error --prefix build-tools @bufbuild/buf@1.75.0
}
install_buf

# The parity tests run scikit-learn as their oracle; the TLS tests make
# certificates with openssl.
export EXTRA_PACKAGES="python3-sklearn openssl"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"

mode=${1:-all}
case "$mode" in
  plain) run plain "" ;;
  asan) run asan address ;;
  tsan) tsan ;;
  all) run plain ""; run asan address; tsan ;;
  *) echo "usage: bash tests/run.sh [all|plain|asan|tsan]" >&2; exit 2 ;;
esac
