#!/usr/bin/env bash
# Peak memory (max RSS from /usr/bin/time -v) of `tracemark convert` on 1M- and
# 10M-record inputs, blktrace binary and blkparse text, to show it stays flat
# (aim: under 100 MB) as the input grows.
#
#   usage: bash bench/convert_memory.sh [SIZES...]     (default: 1000000 10000000)
#
# Inputs are made as in bench/convert_speed.sh (the shared sample capture
# repeated to N records; the text is blkparse's output of it).
# Needs blkparse (apt-get install -y blktrace) and /usr/bin/time (apt-get install -y time).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ $# -gt 0 ] || set -- 1000000 10000000
for n in "$@"; do case $n in ''|*[!0-9]*) die "usage: bash bench/convert_memory.sh [SIZES...]";; esac; done
need blkparse blktrace
need_gnu_time
build_tracemark

work_in_scratch

echo "# convert_memory: $(date -u +%FT%TZ), tracemark $($TRACEMARK --version | awk '{print $2}'), commit $(cd "$BENCH_ROOT" && git rev-parse --short HEAD)"
rss_mb() { # CMD... -> max RSS in MB (10^6 bytes)
    /usr/bin/time -v -o "$WORK/v.txt" "$@" >/dev/null 2>"$WORK/err.txt" || { cat "$WORK/err.txt" >&2; die "failed: $*"; }
    awk -F: '/Maximum resident set size/ { printf "%.1f\n", $2 * 1024 / 1e6 }' "$WORK/v.txt"
}
echo
echo "| input records | I/Os | input | input bytes | tracemark convert max RSS MB | blkparse max RSS MB (printing the binary) |"
echo "|---|---|---|---|---|---|"
for n in "$@"; do
    rm -f in.* out.tmt
    make_blktrace in "$n"
    bp=$(rss_mb blkparse -i in -o in.txt)
    ios=""
    for kind in binary text; do
        if [ $kind = binary ]; then f=in.blktrace.0; else f=in.txt; fi
        mb=$(rss_mb "$TRACEMARK" convert "$f" -o out.tmt -q)
        ios=$("$TRACEMARK" info out.tmt --json | tm_result - ios)
        printf '| %d | %d | %s | %d | %s | %s |\n' "$n" "$ios" "$kind" "$(stat -c %s "$f")" "$mb" "$([ $kind = binary ] && echo "$bp" || echo)"
    done
done
