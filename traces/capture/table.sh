#!/bin/bash
# Prints the two Markdown tables of traces/README.md ("The traces" and its
# characterisation table) from the traces themselves (`tracemark info --json`,
# formatted by table.py), one row per .tmt named on the command line, in that
# order. tests/cli/reference_traces.rs checks that every line this prints for the
# traces in traces/ is in traces/README.md: rerun it after adding or
# recapturing a trace and paste its output over the tables.
# Usage: traces/capture/table.sh traces/*.tmt   (TRACEMARK=path/to/tracemark picks the binary)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TRACEMARK=${TRACEMARK:-$HERE/../../target/release/tracemark}
[ $# -gt 0 ] || { echo "usage: $0 TRACE.tmt..." >&2; exit 2; }
for f in "$@"; do
    "$TRACEMARK" info --json "$f" || { echo "$0: tracemark info --json $f failed" >&2; exit 1; }
    echo "%%"
done | python3 "$HERE/table.py"
