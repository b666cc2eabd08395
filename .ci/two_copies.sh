#!/usr/bin/env bash
# Hermeticity check: every test binary of the workspace run twice at once
# (two copies side by side, as two users or two CI jobs on one machine
# would), each with skips turned into failures. A test that assumes it owns
# a path, a device number, tracefs's top level or a build directory fails
# in one of the copies. Prints one line per binary and exits non-zero when
# any copy failed; each copy's output is kept in OUT (default: a temporary
# directory, printed).
# Usage: .ci/two_copies.sh [OUT]   (as root, so the device tests run)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-$(mktemp -d /tmp/tracemark-two-copies.XXXXXX)}
mkdir -p "$OUT"
export TRACEMARK_NO_SKIP=1

# The test executables, as cargo builds them for the README's test command,
# each with its package's directory (cargo runs a test binary there, and
# tests read files relative to it).
mapfile -t binaries < <(cargo test --workspace --release --no-run --message-format=json 2>/dev/null |
    python3 -c '
import json, os, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("profile", {}).get("test") and m.get("executable"):
        print(os.path.dirname(m["manifest_path"]) + "\t" + m["executable"])')
[ ${#binaries[@]} -gt 0 ] || { echo "two_copies.sh: no test executables found" >&2; exit 1; }

failed=0
for entry in "${binaries[@]}"; do
    dir=${entry%%$'\t'*} bin=${entry#*$'\t'}
    name=$(basename "$bin")
    start=$SECONDS
    (cd "$dir" && "$bin" > "$OUT/$name.1.txt" 2>&1) & first=$!
    (cd "$dir" && "$bin" > "$OUT/$name.2.txt" 2>&1) & second=$!
    rc1=0 rc2=0
    wait $first || rc1=$?
    wait $second || rc2=$?
    summary() { grep -E '^test result:' "$1" | tail -n 1 | sed 's/^test result: //'; }
    echo "$name ($((SECONDS - start)) s): copy 1 exit $rc1 [$(summary "$OUT/$name.1.txt")], copy 2 exit $rc2 [$(summary "$OUT/$name.2.txt")]"
    if [ $rc1 -ne 0 ] || [ $rc2 -ne 0 ]; then
        failed=1
        grep -h -E '^test .* FAILED$|^---- ' "$OUT/$name.1.txt" "$OUT/$name.2.txt" | sort -u | sed 's/^/    /' || true
    fi
done
echo "outputs in $OUT"
exit $failed
