#!/usr/bin/env bash
# Builds the server if needed and runs it in the foreground, storing models
# in ./data. Extra arguments go to the server (see --help), e.g.
#
#   bash deploy/serve.sh --listen=127.0.0.1:50051 --data_dir=/var/lib/halfspace
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/build.sh halfspace_server_main halfspace_cli
exec build/halfspace-server --listen=0.0.0.0:50051 --data_dir=data "$@"
