#!/usr/bin/env bash
# Mutation testing: does the suite notice when the code is wrong?
#
#   bash tests/mutate.sh [PATTERN]
#
# Applies each mutant of tests/mutants.txt (those whose line matches PATTERN,
# if given) alone to a copy of the working tree, rebuilds, and runs the whole
# suite (but the buf checks, which read only the proto), stopping at the
# first failing test. A mutant is killed when some
# test fails, survives when all pass, and is left out of the score when it
# does not compile. Prints one line per mutant and then the score: killed /
# compiled. Takes about half a minute per mutant on two cores, so it runs on
# demand, not in CI. The copy lives in build-mutants/ (reused between runs).
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
pattern=${1:-}
work=$top/build-mutants/tree
mkdir -p "$work"
git ls-files -z | xargs -0 cp --parents -t "$work"
cp tests/mutants.txt "$work/../mutants.txt"  # edits during a run do not count
# The npm tools tests/run.sh installed (the Node example's test needs them).
if [ -d build-tools ]; then ln -sfn "$top/build-tools" "$work/build-tools"; fi
cd "$work"
BUILD_DIR=build bash deploy/build.sh > ../build.log 2>&1 ||
  { echo "the unmutated tree does not build: see build-mutants/build.log"; exit 1; }
# Every test but the API's buf checks, which read only the proto.
run_suite() {
  ctest --test-dir build -j2 --timeout 120 --stop-on-failure -LE api \
    > ../ctest.log 2>&1 < /dev/null
}
run_suite || { echo "the unmutated suite fails: see build-mutants/ctest.log"; exit 1; }

killed=0 survived=0 broken=0 stale=0
while IFS= read -r line <&3; do
  case "$line" in ''|'#'*) continue ;; esac
  [ -n "$pattern" ] && [[ "$line" != *"$pattern"* ]] && continue
  file=${line%% ==>*}
  if [ -f "$file" ]; then cp "$file" ../original; fi
  if ! [ -f "$file" ] || ! python3 - "$line" <<'PY'
import sys
# FILE ==> ORIGINAL ==> MUTANT; an empty MUTANT deletes; \n is a line break.
file, original, mutant = (f[1:] if f.startswith(" ") else f
                          for f in sys.argv[1].split(" ==>"))
original, mutant = (f.replace("\\n", "\n") for f in (original, mutant))
text = open(file.strip()).read()
if text.count(original) != 1:
    sys.exit(1)
open(file.strip(), "w").write(text.replace(original, mutant))
PY
  then
    stale=$((stale + 1))
    echo "STALE     $line"
    continue
  fi
  if ! cmake --build build -j2 > ../build.log 2>&1 < /dev/null; then
    broken=$((broken + 1)); verdict="NO-BUILD "
  elif run_suite; then
    survived=$((survived + 1)); verdict="SURVIVED "
  else
    killed=$((killed + 1)); verdict="killed   "
  fi
  echo "$verdict $line"
  cp ../original "$file"
  touch "$file"
done 3< ../mutants.txt
cmake --build build -j2 > ../build.log 2>&1 || true

compiled=$((killed + survived))
echo "killed $killed of $compiled compiled mutants ($((compiled ? 100 * killed / compiled : 0)) %);" \
     "$broken did not compile, $stale stale"
[ "$stale" = 0 ]
