#!/usr/bin/env bash
# Builds and runs the test suite.
#
#   bash tests/run.sh            all of it: the format check, the plain build,
#                                then ASan+UBSan, then TSan, then a short
#                                fuzz run
#   bash tests/run.sh plain      the plain build only (the quick loop)
#   bash tests/run.sh asan|tsan  one sanitizer build only
#   bash tests/run.sh fuzz       the fuzz targets, FUZZ_SECONDS (15) each
#   bash tests/run.sh format     every C++ file as clang-format leaves it
set -euo pipefail
cd "$(dirname "$0")/.."

# PRUNE_BUILDS=1 (as CI sets it) removes each build's directory once its
# tests have passed: the four builds with their debug information would
# otherwise be on the disk together, and a small disk fills.
prune() {
  [ "${PRUNE_BUILDS:-0}" = 1 ] || return 0
  echo "removing $1 ($(du -sh "$1" | cut -f1))"
  rm -rf "$1"
}

# run NAME SANITIZER: build everything and run every test.
run() {
  local name=$1 sanitize=$2 dir="build${2:+-$1}"
  echo "=== $name build ==="
  BUILD_DIR="$dir" SANITIZE="$sanitize" bash deploy/build.sh
  echo "=== $name tests ==="
  ctest --test-dir "$dir" --output-on-failure -j2 --timeout 300
  prune "$dir"
}

# Debian's gRPC and Abseil are not built for TSan, which then cannot see
# their synchronization and reports races in any code that gRPC hands data
# between threads. So the TSan build runs the "unit" tests: everything that
# involves no gRPC (models, registry and store under concurrency, the gate).
tsan() {
  echo "=== tsan build ==="
  BUILD_DIR=build-tsan SANITIZE=thread bash deploy/build.sh perceptron_test \
    logistic_regression_test model_test model_store_test call_gate_test \
    passive_aggressive_test confidence_weighted_test sgd_test multiclass_test \
    evaluation_test algorithm_state_test standardizer_test undo_log_test \
    feature_space_test write_ahead_log_test limits_test lazy_test \
    drift_reaction_test event_feed_test ftrl_proximal_test
  echo "=== tsan tests ==="
  ctest --test-dir build-tsan --output-on-failure -j2 --timeout 300 -L unit
  prune build-tsan
}

# libFuzzer (clang, with ASan and UBSan) on every decoder and validator of
# outside input, each target for FUZZ_SECONDS from its seed corpus in
# tests/fuzz/corpus (copied: the run's finds stay out of the repository).
# A crash, a leak, a timeout or running out of memory fails the run.
# Being clang's, this build also checks the locking annotations
# (-Wthread-safety) of everything it compiles: the fuzz targets link the
# server and core, and the CLI brings the client.
fuzz() {
  echo "=== fuzz build ==="
  local targets=(snapshot_fuzzer write_ahead_log_fuzzer log_record_fuzzer
                 train_request_fuzzer create_model_fuzzer tokens_fuzzer
                 producer_message_fuzzer vw_line_fuzzer http_request_fuzzer)
  CXX=clang++ EXTRA_PACKAGES="clang libfuzzer-14-dev" BUILD_DIR=build-fuzz \
    SANITIZE=fuzz bash deploy/build.sh "${targets[@]}" halfspace_server_main \
    halfspace_cli
  echo "=== fuzz runs ==="
  local work
  work=$(mktemp -d)
  for t in "${targets[@]}"; do
    mkdir -p "$work/$t"
    cp tests/fuzz/corpus/$t/* "$work/$t/" 2> /dev/null || true
    (cd "$work" && "$OLDPWD/build-fuzz/tests/fuzz/$t" "$t" \
       -max_total_time="${FUZZ_SECONDS:-15}" -seed="${FUZZ_SEED:-1}" \
       -rss_limit_mb=2048 -timeout=10 \
       -print_final_stats=1 2>&1 | grep -E "stat::number_of_executed_units|ERROR|SUMMARY" \
       | sed "s/^/$t: /") || true
    # Any one kind of artifact fails the run (ls of the four globs would
    # succeed only if every kind were there).
    local found
    found=$(ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* \
              "$work"/oom-* 2> /dev/null || true)
    if [ -n "$found" ]; then
      echo "$t found a failing input: $found" >&2
      exit 1
    fi
  done
  rm -rf "$work"
  prune build-fuzz
}

# Every C++ file in the code's style (.clang-format: Google's), as
# clang-format leaves it: a file it would change fails the run, naming the
# lines. Fix with: git ls-files '*.cc' '*.h' | xargs clang-format -i
format() {
  echo "=== format ==="
  bash deploy/install_packages.sh clang-format
  git ls-files '*.cc' '*.h' | xargs clang-format --dry-run --Werror
}

# From the npm registry, pinned: buf, for the API's lint and compatibility
# checks (Debian does not package it); gRPC for Node, for the Node
# example's test; and puppeteer-core, which drives Debian's Chromium in the
# web console's test (it downloads no browser).
install_npm_tools() {
  local tools=(@bufbuild/buf@1.75.0 @grpc/grpc-js@1.14.7
               @grpc/proto-loader@0.8.1 puppeteer-core@23.11.1)
  [ -x build-tools/node_modules/.bin/buf ] \
    && [ -d build-tools/node_modules/@grpc/grpc-js ] \
    && [ -d build-tools/node_modules/@grpc/proto-loader ] \
    && [ -d build-tools/node_modules/puppeteer-core ] && return
  if ! command -v npm > /dev/null; then
    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get \
      -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends npm
  fi
  echo "installing ${tools[*]}"
  npm_config_cache="$PWD/build-tools/npm-cache" npm install --no-audit \
    --no-fund --loglevel=error --prefix build-tools "${tools[@]}"
}
install_npm_tools

# The parity tests run scikit-learn as their oracle, on the reference BLAS
# and LAPACK (tests/parity/reference_blas.py); the TLS tests make
# certificates with openssl; the Python client's tests need grpcio, and
# python3-venv and pip to install the package as users do; the sharding
# test runs nginx in front of three servers; the replication test runs a
# JetStream cluster of nats-server processes; the README's JSON-over-HTTP
# sessions call it with curl; the web console is tested in Chromium.
export EXTRA_PACKAGES="python3-sklearn libblas3 liblapack3 openssl python3-grpcio
  python3-protobuf python3-venv python3-pip nginx nats-server curl chromium"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"

mode=${1:-all}
case "$mode" in
  plain) run plain "" ;;
  asan) run asan address ;;
  tsan) tsan ;;
  fuzz) fuzz ;;
  format) format ;;
  all) format; run plain ""; run asan address; tsan; fuzz ;;
  *) echo "usage: bash tests/run.sh [all|plain|asan|tsan|fuzz|format]" >&2
     exit 2 ;;
esac
