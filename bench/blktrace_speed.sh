#!/bin/sh
# Conversion speed of tracemark's blktrace binary parser against blkparse on the
# same input: a capture repeated with shifted times to RECORDS records (10M by
# default), parsed on one core by each. Needs blkparse (apt-get install blktrace).
#
#   bench/blktrace_speed.sh [SOURCE.blktrace.N] [RECORDS]
#
# SOURCE must be a little-endian version 7 blktrace file; by default the shared
# sample is used.
set -eu
cd "$(dirname "$0")/.."
src=${1:-/work/shared/samples/blktrace-binary/takeoverjp__blktrace_viewer__sample.blktrace.0}
records=${2:-10000000}
command -v blkparse >/dev/null || { echo "blkparse is not installed (apt-get install blktrace)" >&2; exit 1; }
[ -f "$src" ] || { echo "no source capture: $src" >&2; exit 1; }

cargo build -q --release -p recorder --example blktrace_speed
tool=target/release/examples/blktrace_speed
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$tool" make "$src" "$work/big.blktrace.0" "$records" >/dev/null
echo "input: $(stat -c %s "$work/big.blktrace.0") bytes"

# One core for both.
ours=$(taskset -c 0 "$tool" parse "$work/big")
echo "tracemark: $ours"
n=$(echo "$ours" | sed 's/.*records=\([0-9]*\).*/\1/')
ours_s=$(echo "$ours" | sed 's/.*seconds=\([0-9.]*\).*/\1/')

start=$(date +%s.%N)
(cd "$work" && taskset -c 0 blkparse -i big -o /dev/null >/dev/null 2>&1)
end=$(date +%s.%N)
theirs_s=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }')
awk -v n="$n" -v s="$theirs_s" 'BEGIN { printf "blkparse:  records=%d seconds=%.3f records_per_second=%.0f\n", n, s, n / s }'
awk -v a="$ours_s" -v b="$theirs_s" 'BEGIN { printf "ratio: tracemark is %.1fx faster than blkparse\n", b / a }'
