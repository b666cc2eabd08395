#!/usr/bin/env bash
# Does a memory map read faster than tracemark's readers? In one process, the
# ways alternated run by run, over inputs already in the page cache:
#  - a .tmt, every record decoded: `TraceFile` (positioned reads, one chunk at
#    a time: replay, info, export), `TraceReader` over a 64 KiB `BufReader`,
#    and `TraceReader` over the file's memory map;
#  - a blktrace binary file, every record parsed: over a 64 KiB `BufReader`
#    (as `convert` reads it) and over the file's memory map.
# Reports each way's median seconds of RUNS and the ratios to the map.
#
#   usage: bash bench/mmap_read.sh [RECORDS] [IOS] [RUNS]
#          (defaults 24000000 blktrace records, 20000000 .tmt I/Os, 5 runs)
#
# The blktrace input is the shared sample capture repeated with shifted times
# to RECORDS records (lib.sh's make_blktrace); the .tmt holds IOS random 4 KiB
# I/Os over 64 GiB at 100,000 IOPS (replayer's synth_trace example): random
# offsets compress as little as real ones, where the repeated sample's
# conversion would shrink to almost nothing.
# Results: docs/measurements/mmap-read.md.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

RECORDS=${1:-24000000}
IOS=${2:-20000000}
RUNS=${3:-5}
case $RECORDS$IOS$RUNS in *[!0-9]*) die "usage: bash bench/mmap_read.sh [RECORDS] [IOS] [RUNS]";; esac
build_tracemark
if [ "${BENCH_NO_BUILD:-0}" != 1 ] || [ ! -x "$BENCH_TARGET/release/examples/mmap_read" ] \
    || [ ! -x "$BENCH_TARGET/release/examples/synth_trace" ]; then
    (cd "$BENCH_ROOT" && cargo build -q --release -p recorder --example mmap_read \
        && cargo build -q --release -p replayer --example synth_trace) \
        || die "building the mmap_read and synth_trace examples failed"
fi
TOOL=$BENCH_TARGET/release/examples/mmap_read

work_in_scratch

echo "# mmap_read: $(date -u +%FT%TZ), $(nproc) cores, kernel $(uname -r), commit $(cd "$BENCH_ROOT" && git rev-parse --short HEAD), load $(cut -d' ' -f1-3 /proc/loadavg)"
make_blktrace big "$RECORDS"
"$BENCH_TARGET/release/examples/synth_trace" big.tmt "$IOS" 65536 70 100000 \
    || die "generating big.tmt failed"
echo "# inputs: big.blktrace.0 $(stat -c %s big.blktrace.0) bytes, big.tmt $(stat -c %s big.tmt) bytes ($("$TRACEMARK" info big.tmt --json | tm_result - ios) I/Os)"
cat big.blktrace.0 big.tmt > /dev/null # both in the page cache before the first run

echo
echo "## .tmt, every record decoded ($RUNS runs each)"
"$TOOL" tmt big.tmt "$RUNS"
echo
echo "## blktrace binary, every record parsed ($RUNS runs each)"
"$TOOL" blktrace big.blktrace.0 "$RUNS"
