#!/usr/bin/env bash
# Tests the image end to end with podman: builds it, runs it with a named
# volume, trains and predicts through the published port with the CLI,
# stops it (SIGTERM: drain and snapshot), starts a new container on the same
# volume and checks the model is still there, runs the image's
# HEALTHCHECK, and checks that a data volume the image's user cannot write
# stops the server with a message that says so.
#
#   bash deploy/container_test.sh
#
# Minutes long (a base image is made with debootstrap when no registry is
# reachable, then the build, whose first stage builds and runs the tests:
# about 7 minutes on 2 cores once the base image is cached), so not part of
# tests/run.sh: run it after changing the Dockerfile, deploy/ or the
# server's start and stop. Needs root, and build/halfspace (bash
# deploy/build.sh halfspace_cli).
set -euo pipefail
cd "$(dirname "$0")/.."
cli=build/halfspace
[ -x "$cli" ] || bash deploy/build.sh halfspace_cli

need=(podman buildah runc debootstrap fuse-overlayfs slirp4netns uidmap
      netavark aardvark-dns iptables)
bash deploy/install_packages.sh "${need[@]}"

# podman's state under one directory, kept between runs (the base image).
state=${CONTAINER_STATE:-/var/tmp/halfspace-podman}
mkdir -p "$state/tmp"
cat > "$state/storage.conf" <<CONF
[storage]
driver = "overlay"
graphroot = "$state/graph"
runroot = "$state/run"
CONF
cat > "$state/containers.conf" <<'CONF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
export CONTAINERS_STORAGE_CONF="$state/storage.conf"
export CONTAINERS_CONF="$state/containers.conf"
export TMPDIR="$state/tmp"

base=docker.io/library/debian:bookworm-slim
if ! podman image exists "$base" && ! podman pull -q "$base" 2> /dev/null; then
  echo "making $base with debootstrap"
  rootfs=$(mktemp -d)
  debootstrap --variant=minbase bookworm "$rootfs" > "$state/debootstrap.log"
  tar -C "$rootfs" -c . | podman import - "$base" > /dev/null
  rm -rf "$rootfs"
fi

image=halfspace:test
echo "building $image"
# The docker format keeps the HEALTHCHECK (OCI images have none).
# The build stage runs the tests: on failure, show what they said.
if ! podman build --format docker --network=host -t "$image" . \
     > "$state/build.log" 2>&1; then
  grep -E "tests (passed|failed)|\(Failed\)|\*\*\*|Failure|Error" \
    "$state/build.log" | tail -40 >&2
  echo "the image build failed; its output: $state/build.log" >&2
  exit 1
fi

port=$((20000 + RANDOM % 20000))
limits=(--ulimit nofile=4096:4096 --ulimit nproc=4096:4096)
# Without systemd, podman logs that it cannot schedule the HEALTHCHECK's
# timer; `podman healthcheck run` below runs it all the same.
volume=halfspace-test-$$
cleanup() {
  for c in hs-test-1 hs-test-2 hs-test-ro; do  # one by one: a missing one
    podman rm -f -t 0 "$c" > /dev/null 2>&1 || true  # fails the whole call
  done
  podman volume rm -f "$volume" > /dev/null 2>&1 || true
  rm -rf "${readonly_dir:-}"
}
cleanup  # what an interrupted run left
trap cleanup EXIT
readonly_dir=$(mktemp -d)
run() {  # run NAME VOLUME
  podman run -d --name "$1" -p "127.0.0.1:$port:50051" "${limits[@]}" \
    -v "$2:/var/lib/halfspace" "$image" > /dev/null
}
wait_serving() {
  for _ in $(seq 120); do
    "$cli" --server="127.0.0.1:$port" health > /dev/null 2>&1 && return
    sleep 0.5
  done
  echo "the container did not become SERVING" >&2
  podman logs "$1" >&2
  exit 1
}
h() { "$cli" --server="127.0.0.1:$port" "$@"; }

run hs-test-1 "$volume"
wait_serving hs-test-1
h create notes --dimension=2 > /dev/null
printf '1,1,2\n-1,2,1\n-1,0,0\n' | h train notes - | tail -1
h predict notes 3,0 | grep -q "label=-1  score=-4" \
  || { echo "unexpected prediction" >&2; exit 1; }
podman stop -t 30 hs-test-1 > /dev/null
code=$(podman inspect hs-test-1 --format '{{.State.ExitCode}}')
[ "$code" = 0 ] || { echo "stopped with exit code $code" >&2; exit 1; }
podman logs hs-test-1 2>&1 | grep -q "stopped; models stored" \
  || { podman logs hs-test-1 >&2; echo "no clean stop" >&2; exit 1; }

run hs-test-2 "$volume"
wait_serving hs-test-2
h get notes | grep -q "examples_seen=3" \
  || { h get notes >&2; echo "the model did not survive" >&2; exit 1; }
podman healthcheck run hs-test-2 \
  || { echo "the image's HEALTHCHECK failed" >&2; exit 1; }
podman rm -f -t 0 hs-test-2 > /dev/null

# A host directory owned by root, not writable by the image's user.
chmod 755 "$readonly_dir"
podman run --name hs-test-ro "${limits[@]}" \
  -v "$readonly_dir:/var/lib/halfspace" "$image" > "$state/ro.log" 2>&1 \
  && { echo "the server started on a volume it cannot write" >&2; exit 1; }
grep -q "is not writable by this process" "$state/ro.log" \
  || { cat "$state/ro.log" >&2; exit 1; }

echo "the image trained, stopped, kept its model, reported its health and" \
     "refused a volume it cannot write"
