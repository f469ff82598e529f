#!/usr/bin/env bash
# Builds the server if needed and runs it in the foreground, storing models
# in ./data and serving this machine (127.0.0.1:50051). Extra arguments go to
# the server (see --help), e.g.
#
#   bash deploy/serve.sh --listen=0.0.0.0:50051 --tokens_file=tokens
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/build.sh halfspace_server_main halfspace_cli
exec build/halfspace-server --data_dir=data "$@"
