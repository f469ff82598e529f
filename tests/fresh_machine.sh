#!/usr/bin/env bash
# The release check: the README's two commands in a bare Debian 12, as a new
# user's machine has it, so that a missing install step or a test that
# depends on what this machine happens to have shows before users see it.
#
#   bash tests/fresh_machine.sh [all|plain|asan|tsan|fuzz]   (default plain)
#
# Needs root and debootstrap (it installs debootstrap if missing). It makes
# a minbase bookworm root in a temporary folder, takes this machine's
# resolver and certificate authorities into it (as build chroots do, so
# that apt reaches the archive), clones the committed tree into it, then
# inside it runs `bash deploy/serve.sh` until the server answers its health
# check, stops it, and runs `bash tests/run.sh MODE`. Everything the two
# commands need, they install themselves. The folder is removed at the end
# (KEEP_ROOT=1 keeps it). Not part of .ci/run, which already runs on a
# clean clone: this is the step before a release.
set -euo pipefail
mode=${1:-plain}
here=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" = 0 ] || { echo "run as root (debootstrap and chroot)" >&2; exit 2; }
command -v debootstrap > /dev/null ||
  bash "$here/deploy/install_packages.sh" debootstrap

root=$(mktemp -d /var/tmp/halfspace-fresh.XXXXXX)
cleanup() {
  for m in dev/pts dev proc sys; do umount -l "$root/$m" 2> /dev/null || true; done
  [ "${KEEP_ROOT:-0}" = 1 ] && { echo "kept $root"; return; }
  rm -rf "$root"
}
trap cleanup EXIT

echo "=== a bare Debian 12 in $root ==="
debootstrap --variant=minbase bookworm "$root" > "$root.debootstrap.log" 2>&1 ||
  { tail -20 "$root.debootstrap.log"; exit 1; }
rm -f "$root.debootstrap.log"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# A machine's own names (minbase leaves /etc/hosts out: localhost would not
# resolve).
cp /etc/hosts "$root/etc/hosts"
mkdir -p "$root/etc/ssl/certs"
cp -rL /etc/ssl/certs/. "$root/etc/ssl/certs/" 2> /dev/null || true
for m in proc sys dev dev/pts; do mount --bind "/$m" "$root/$m"; done

# The committed tree, as a user's clone has it (git is not there yet).
git -C "$here" archive --format=tar --prefix=halfspace/ HEAD |
  tar -C "$root/root" -x

echo "=== bash deploy/serve.sh ==="
chroot "$root" /bin/bash -c '
  set -euo pipefail
  cd /root/halfspace
  bash deploy/serve.sh --listen=127.0.0.1:50051 > /root/serve.log 2>&1 &
  server=$!
  for _ in $(seq 1800); do
    if build/halfspace --server=127.0.0.1:50051 health > /dev/null 2>&1; then
      break
    fi
    kill -0 "$server" 2> /dev/null || { tail -30 /root/serve.log; exit 1; }
    sleep 1
  done
  build/halfspace --server=127.0.0.1:50051 health
  kill -TERM "$server"
  wait "$server"
'

echo "=== bash tests/run.sh $mode ==="
chroot "$root" /bin/bash -c "cd /root/halfspace && bash tests/run.sh $mode"
echo "the README's two commands passed on a fresh Debian 12"
