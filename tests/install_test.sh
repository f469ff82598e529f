#!/usr/bin/env bash
# Installs the build, builds tests/install (a project outside the tree that
# does find_package(halfspace) and links halfspace::client) against the
# installation, and runs it against the installed server on a Unix socket.
#
#   bash tests/install_test.sh BUILD_DIR
set -euo pipefail
build=$1
here=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2> /dev/null; rm -rf "$dir"' EXIT

cmake --install "$build" --prefix "$dir/prefix" > "$dir/install.log"
cmake -S "$here/tests/install" -B "$dir/consumer" \
  -DCMAKE_PREFIX_PATH="$dir/prefix" > "$dir/configure.log" \
  || { cat "$dir/configure.log"; exit 1; }
cmake --build "$dir/consumer" > "$dir/build.log" \
  || { cat "$dir/build.log"; exit 1; }

"$dir/prefix/bin/halfspace-server" --listen="unix:$dir/halfspace.sock" \
  --data_dir="$dir/data" --log_level=warn > "$dir/server.log" 2>&1 &
pid=$!
for _ in $(seq 100); do [ -S "$dir/halfspace.sock" ] && break; sleep 0.1; done
"$dir/consumer/consumer" "unix:$dir/halfspace.sock" > "$dir/out"
diff -u - "$dir/out" <<'EXPECTED'
score=0 updated=1
score=5 updated=1
score=0 updated=1
label=+1 score=0
label=-1 score=-4
EXPECTED
echo "a project outside the tree built and ran against the installed client"
