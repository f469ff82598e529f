#!/usr/bin/env bash
# The API's machine checks: `buf lint` (STANDARD and COMMENTS rules, see
# proto/buf.yaml) and `buf breaking` against halfspace-v1.binpb, the v1 API
# as first published, so that no later change can break a client built from
# it. Then the check is shown to bite: a copy of the API with an RPC removed
# must fail it.
#
# The storage messages (model files, log records) are checked the same way
# for their wire format against storage-v1.binpb, the storage.proto of the
# last release before the write path (git show f069662:proto/halfspace/
# storage/v1/storage.proto, built with `buf build`): data directories it
# wrote must read back. A copy with a field renumbered must fail it.
#
#   bash tests/api/check.sh BUF
#
# To add to the API: add fields, messages, enum values or RPCs; never change
# or remove one. The baseline itself never changes within v1.
set -euo pipefail
buf=$1
cd "$(dirname "$0")/../.."
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export BUF_CACHE_DIR=${BUF_CACHE_DIR:-$scratch/cache}
baseline=tests/api/halfspace-v1.binpb
failed=0
passed=0
check() {  # check NAME COMMAND...: runs a command, counts it, shows its output
  if "${@:2}"; then
    passed=$((passed + 1))
    echo "ok: $1"
  else
    failed=$((failed + 1))
    echo "FAILED: $1"
  fi
}

check "buf lint" "$buf" lint proto
check "buf breaking against v1" "$buf" breaking proto --against "$baseline"

broken=$scratch/broken
mkdir "$broken"
cp -r proto "$broken/"
# The RPC and its options, through the line that closes it.
sed -i '/rpc Predict(PredictRequest)/,/^  }$/d' \
  "$broken/proto/halfspace/v1/halfspace.proto"
bites() {
  ! "$buf" breaking "$broken/proto" --against "$baseline" > "$broken/out" 2>&1 &&
    grep -q 'Predict' "$broken/out"
}
check "buf breaking catches a removed RPC" bites

# The storage messages alone, as a module of their own with buf's WIRE
# rules: names may change, field numbers and types may not.
storage=$scratch/storage
mkdir -p "$storage/halfspace"
cp -r proto/halfspace/storage "$storage/halfspace/"
printf 'version: v2\nbreaking:\n  use:\n    - WIRE\n' > "$storage/buf.yaml"
check "buf breaking, storage wire format" \
  "$buf" breaking "$storage" --against tests/api/storage-v1.binpb
renumbered=$scratch/renumbered
cp -r "$storage" "$renumbered"
sed -i 's/  bytes request = 1;/  bytes request = 99;/' \
  "$renumbered/halfspace/storage/v1/storage.proto"
storage_bites() {
  ! "$buf" breaking "$renumbered" --against tests/api/storage-v1.binpb \
    > "$renumbered/out" 2>&1 && grep -q 'request' "$renumbered/out"
}
check "buf breaking catches a renumbered storage field" storage_bites

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
