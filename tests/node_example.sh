#!/usr/bin/env bash
# Runs client/node/example.js against a real server on a Unix socket and
# checks what it prints: the perceptron's numbers for its three examples.
#
#   bash tests/node_example.sh SERVER_BINARY NODE_MODULES_DIR
set -euo pipefail
server=$1
export NODE_PATH=$2
here=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
trap 'kill "$pid" 2> /dev/null || true; wait "$pid" 2> /dev/null || true;
      rm -rf "$dir"' EXIT

"$server" --listen="unix:$dir/halfspace.sock" --data_dir="$dir/data" \
  --log_level=warn > "$dir/server.log" 2>&1 &
pid=$!
for _ in $(seq 100); do [ -S "$dir/halfspace.sock" ] && break; sleep 0.1; done

node "$here/client/node/example.js" "unix:$dir/halfspace.sock" > "$dir/out"
diff -u - "$dir/out" <<'EXPECTED'
score=0 margin=0 updated=true
score=5 margin=-5 updated=true
score=0 margin=0 updated=true
label=+1 score=0 distance=0.0000
label=-1 score=-4 distance=-2.8284
updates=3
EXPECTED

# A second run prints the same: the example starts afresh.
node "$here/client/node/example.js" "unix:$dir/halfspace.sock" > "$dir/again"
diff -u "$dir/out" "$dir/again"
echo "the Node example printed the expected results"
