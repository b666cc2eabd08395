#!/bin/bash
# Prints the Markdown table rows of traces/README.md from the traces themselves
# (tracemark info --json), one row per .tmt named on the command line.
# Usage: traces/capture/table.sh traces/*.tmt
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
TRACEMARK=${TRACEMARK:-$REPO/target/release/tracemark}
echo "| trace | category | I/Os | read MB | write MB | duration s | idle share | file KB | captured (UTC) |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---|"
for f in "$@"; do
  "$TRACEMARK" info --json "$f" | jq -r '
    "| \(.name) | \(.category) | \(.ios) | \(.read_bytes/1e6*10|round/10) | \(.write_bytes/1e6*10|round/10) | \(.duration_ns/1e9*10|round/10) | \(if .duration_ns > 0 then (.idle_ns/.duration_ns*1000|round/10|tostring) + " %" else "-" end) | \(.file_bytes/1024|round) | \(if .capture_start_unix_ns then (.capture_start_unix_ns/1e9|floor|todate) else "-" end) |"'
done
