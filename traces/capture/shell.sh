#!/bin/bash
# Attaches the capture root and runs COMMAND in it as `bench` (default: a
# shell), for trying applications out; detaches afterwards. Nothing is traced.
# Usage: traces/capture/shell.sh [COMMAND ARGS...]
source "$(dirname "$0")/common.sh"
root_attach
install_helpers
if [ $# -eq 0 ]; then set -- /bin/bash; fi
as_bench "$@"
