#!/usr/bin/env bash
# Conversion speed of `tracemark convert` end to end (parse, normalise,
# compress, write the .tmt) on one core, for blktrace binary and for blkparse
# text input, against blkparse printing the same binary.
#
#   usage: bash bench/convert_speed.sh [RECORDS] [RUNS]    (defaults 10000000 and 3)
#
# The binary input is the shared sample capture repeated with shifted times to
# RECORDS blktrace records (as bench/blktrace_speed.sh makes it; set
# BLKTRACE_SAMPLE to use another little-endian v7 NAME.blktrace.0); the text
# input is blkparse's own output of that binary. Every program runs pinned to
# CPU 0 (taskset -c 0); wall and CPU (user+sys) seconds are medians of RUNS.
# Needs blkparse (apt-get install -y blktrace), taskset, /usr/bin/time (apt time).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

RECORDS=${1:-10000000}
RUNS=${2:-3}
case $RECORDS$RUNS in *[!0-9]*) die "usage: bash bench/convert_speed.sh [RECORDS] [RUNS]";; esac
need blkparse blktrace
need taskset util-linux
need_gnu_time
build_tracemark

work_in_scratch

echo "# convert_speed: $(date -u +%FT%TZ), $(nproc) cores, kernel $(uname -r), tracemark $($TRACEMARK --version | awk '{print $2}'), commit $(cd "$BENCH_ROOT" && git rev-parse --short HEAD), load $(cut -d' ' -f1-3 /proc/loadavg)"
make_blktrace big "$RECORDS"
blkparse -i big -o big.txt >/dev/null 2>&1 || die "blkparse failed on the generated binary"
bin_bytes=$(stat -c %s big.blktrace.0)
txt_bytes=$(stat -c %s big.txt)
# Records: blktrace records in the binary (blkparse's event lines in the text).
records=$(awk 'NF >= 6 && $6 ~ /^[A-Z]+$/ { n++ } END { print n + 0 }' big.txt)
echo "# input: $records blktrace records, binary $bin_bytes bytes, blkparse text $txt_bytes bytes"

# timed LABEL CMD...: appends "wall cpu" to $WORK/LABEL.times
timed() {
    local label=$1; shift
    /usr/bin/time -f '%e %U %S %M' -o "$WORK/t.out" taskset -c 0 "$@" >/dev/null 2>"$WORK/err.txt" \
        || { cat "$WORK/err.txt" >&2; die "$label failed: $*"; }
    awk '{ printf "%s %.2f %s\n", $1, $2 + $3, $4 }' "$WORK/t.out" >> "$WORK/$label.times"
}
for run in $(seq 1 "$RUNS"); do
    cat big.blktrace.0 big.txt > /dev/null   # same page-cache state for everyone
    timed tm_bin "$TRACEMARK" convert big.blktrace.0 -o bin.tmt -q
    timed tm_txt "$TRACEMARK" convert big.txt -o txt.tmt -q
    timed blkparse blkparse -i big -o /dev/null
    echo "# run $run: tracemark binary $(tail -1 tm_bin.times), text $(tail -1 tm_txt.times), blkparse $(tail -1 blkparse.times) (wall s, cpu s, max RSS KiB)"
done
ios=$("$TRACEMARK" info bin.tmt --json | tm_result - ios)
ios_txt=$("$TRACEMARK" info txt.tmt --json | tm_result - ios)
[ "$ios" = "$ios_txt" ] || echo "warning: binary gave $ios I/Os, text gave $ios_txt" >&2

# shellcheck disable=SC2046 # one argument per figure
col() { median $(awk -v c="$2" '{ print $c }' "$1.times"); }
bp_wall=$(col blkparse 1)
bp_cpu=$(col blkparse 2)
echo
echo "## $records blktrace records ($ios I/Os), one core, medians of $RUNS runs"
echo
echo "| program | wall s | cpu s | records/s (wall) | I/Os/s (wall) | speed vs blkparse (wall) | speed vs blkparse (cpu) |"
echo "|---|---|---|---|---|---|---|"
row() {
    local w c
    w=$(col "$1" 1); c=$(col "$1" 2)
    printf '| %s | %.2f | %.2f | %.0f | %.0f | %sx | %sx |\n' "$2" "$w" "$c" \
        "$(awk -v n="$records" -v s="$w" 'BEGIN { print n / s }')" \
        "$(awk -v n="$ios" -v s="$w" 'BEGIN { print n / s }')" "$(ratio "$bp_wall" "$w")" "$(ratio "$bp_cpu" "$c")"
}
row tm_bin "tracemark convert, blktrace binary -> .tmt"
row tm_txt "tracemark convert, blkparse text -> .tmt"
row blkparse "blkparse -i big -o /dev/null (binary -> text)"
