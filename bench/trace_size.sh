#!/usr/bin/env bash
# Bytes per I/O of .tmt traces against the source, blktrace binary, a fio
# iolog of the same I/O and zstd -19 of the text forms.
#
#   usage: bash bench/trace_size.sh [--no-capture]      (root for the capture)
#
# Rows: the project's traces/*.tmt (as shipped), the public samples in
# /work/shared/samples when present (read only; set SAMPLES=DIR for another
# folder), and a fresh capture made here: /usr/include (SRC_TREE) untarred onto
# ext4 on a loop device and synced, then read back from a cold mount, traced at
# once with tracefs block_rq_issue/complete (private instance) and with blktrace.
# For each row, bench/tmt_columns.py splits the .tmt into its columns.
# Needs zstd, python3, blktrace/blkparse (apt-get install -y zstd blktrace).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

CAPTURE=1
case ${1:-} in
    "") ;;
    --no-capture) CAPTURE=0 ;;
    *) die "usage: bash bench/trace_size.sh [--no-capture]" ;;
esac
SAMPLES=${SAMPLES:-/work/shared/samples}
SRC_TREE=${SRC_TREE:-/usr/include}
need zstd
need python3
need blkparse blktrace
if [ "$CAPTURE" = 1 ]; then
    need_root
    need blktrace blktrace
    need mkfs.ext4 e2fsprogs
    need losetup util-linux
fi
build_tracemark

WORK=$(mktemp -d /var/tmp/tracemark-bench.XXXXXX)
LOOP="" MNT="" BTPID="" DEBUGFS_MOUNTED_HERE=0
cleanup() {
    [ -n "$BTPID" ] && kill -INT "$BTPID" 2>/dev/null && wait "$BTPID" 2>/dev/null || true
    trace_instance_release
    [ -n "$MNT" ] && mountpoint -q "$MNT" && umount "$MNT" 2>/dev/null || true
    [ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null || true
    [ "$DEBUGFS_MOUNTED_HERE" = 1 ] && umount /sys/kernel/debug 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bytes() { cat "$@" | wc -c; }
z19() { cat "$@" | zstd -19 -q -c | wc -c; }
per() { awk -v b="$1" -v n="$2" 'BEGIN { if (b == "" || b == "-") print "-"; else printf "%.2f", b / n }'; }

ROWS=$WORK/rows.md
COLS=$WORK/cols.md
NOTES=$WORK/notes.txt
: > "$ROWS"; : > "$COLS"; : > "$NOTES"

# row NAME TMT_DEFAULT [TMT_19] [SOURCE_BYTES SOURCE_KIND] [BLKTRACE_BYTES] [TEXT_FILES...]
# TEXT_FILES are the text forms of this I/O (source text, blkparse output); the
# fio iolog is exported from the .tmt here.
row() {
    local name=$1 tmt=$2 tmt19=$3 src_bytes=$4 src_kind=$5 bt_bytes=$6; shift 6
    local ios fio zf ztxt best_text b
    ios=$("$TRACEMARK" info "$tmt" --json | tm_result - ios)
    [ "$ios" -gt 0 ] || { echo "$name: no I/Os, skipped" >> "$NOTES"; return; }
    "$TRACEMARK" export "$tmt" --to fio -o "$WORK/x.iolog"
    fio=$(bytes "$WORK/x.iolog"); zf=$(z19 "$WORK/x.iolog")
    "$TRACEMARK" export "$tmt" --to csv -o "$WORK/x.csv"
    local zc; zc=$(z19 "$WORK/x.csv")
    best_text=$zf
    [ "$zc" -lt "$best_text" ] && best_text=$zc
    ztxt="-"
    if [ $# -gt 0 ]; then
        ztxt=""
        for f in "$@"; do
            b=$(z19 "$f")
            ztxt="${ztxt:+$ztxt / }$(per "$b" "$ios")"
            [ "$b" -lt "$best_text" ] && best_text=$b
        done
    fi
    local d19=-
    [ -n "$tmt19" ] && d19=$(bytes "$tmt19")
    local dd; dd=$(bytes "$tmt")
    local smallest=$dd
    [ "$d19" != - ] && [ "$d19" -lt "$smallest" ] && smallest=$d19
    local aim="no"
    awk -v s="$smallest" -v n="$ios" -v t="$best_text" 'BEGIN { exit !(s / n < 4 && s < t) }' && aim=yes
    printf '| %s | %d | %s (%s) | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$ios" "$(per "$src_bytes" "$ios")" "$src_kind" \
        "$(per "$bt_bytes" "$ios")" "$(per "$fio" "$ios")" "$ztxt" "$(per "$zf" "$ios")" "$(per "$zc" "$ios")" "$(per "$d19" "$ios")" "$(per "$dd" "$ios")" "$aim" >> "$ROWS"
    local c="columns_zstd19_alone_bytes_per_io" figures
    python3 "$BENCH_ROOT/bench/tmt_columns.py" "${tmt19:-$tmt}" 19 > "$WORK/columns.json"
    read -r -a figures < <(tm_result "$WORK/columns.json" "$c.time" "$c.kind" "$c.offset" "$c.length" \
        "$c.latency" "$c.stream" "$c.device" stored_payload_bytes_per_io file_bytes_per_io)
    awk -v name="$name" -v f="${figures[*]}" 'BEGIN {
        n = split(f, v, " "); line = "| " name
        for (i = 1; i <= 8; i++) line = line sprintf(" | %.2f", v[i])
        printf "%s | %.2f |\n", line, v[9] - v[8] }' >> "$COLS"
}

# convert_both STEM LABEL INPUT... : writes $WORK/STEM.tmt (default level) and STEM.19.tmt
convert_both() {
    local name=$1 label=$2; shift 2
    "$TRACEMARK" convert "$@" -o "$WORK/$name.tmt" -q 2> "$WORK/err.txt" || { echo "$label: not converted: $(head -1 "$WORK/err.txt")" >> "$NOTES"; return 1; }
    "$TRACEMARK" convert "$@" -o "$WORK/$name.19.tmt" --level 19 -q
}

echo "# trace_size: $(date -u +%FT%TZ), tracemark $($TRACEMARK --version | awk '{print $2}'), commit $(cd "$BENCH_ROOT" && git rev-parse --short HEAD), $(zstd --version | head -1)"

# 1. The project's reference traces, as shipped (their level; no source text).
for t in "$BENCH_ROOT"/traces/*.tmt; do
    [ -f "$t" ] || { echo "traces/: no .tmt yet" >> "$NOTES"; break; }
    "$TRACEMARK" export "$t" --to csv -o "$WORK/ref.csv"
    row "traces/$(basename "$t")" "$t" "" "$(bytes "$t")" ".tmt as shipped" - "$WORK/ref.csv"
done

# 2. Public samples (read only; nothing of them is kept).
if [ -d "$SAMPLES" ]; then
    for f in "$SAMPLES"/blkparse/*; do
        [ -f "$f" ] || continue
        n=sample-$(basename "$f")
        convert_both s "$n" "$f" && row "$n" "$WORK/s.tmt" "$WORK/s.19.tmt" "$(bytes "$f")" "blkparse text" - "$f"
    done
    for set in $(printf '%s\n' "$SAMPLES"/blktrace-binary/*.blktrace.* | grep -v '\*' | sed 's/\.blktrace\.[0-9]*$//' | sort -u); do
        files=("$set".blktrace.*)
        n=sample-$(basename "$set")
        convert_both s "$n" "${files[@]}" || continue
        # blkparse's text of the same set, where blkparse accepts it.
        mkdir -p "$WORK/bp"; cp "${files[@]}" "$WORK/bp/"
        texts=()
        if (cd "$WORK/bp" && blkparse -i "$(basename "$set")" -o "$WORK/bp.txt" >/dev/null 2>&1) && [ "$(grep -c ' [QDC] ' "$WORK/bp.txt")" -gt 0 ]; then
            texts=("$WORK/bp.txt")
        else
            echo "$n: blkparse printed no events for it (no text column)" >> "$NOTES"
        fi
        rm -rf "$WORK/bp"
        row "$n" "$WORK/s.tmt" "$WORK/s.19.tmt" "$(bytes "${files[@]}")" "blktrace binary" "$(bytes "${files[@]}")" ${texts[@]+"${texts[@]}"}
    done
    for f in "$SAMPLES"/fio-iolog/* "$SAMPLES"/windows-etw-wpa/* "$SAMPLES"/cloudphysics-vscsi/* "$SAMPLES"/mqsim-disksim-ascii/*; do
        [ -f "$f" ] || continue
        n=sample-$(basename "$f")
        convert_both s "$n" "$f" && row "$n" "$WORK/s.tmt" "$WORK/s.19.tmt" "$(bytes "$f")" "$(basename "$(dirname "$f")") text" - "$f"
    done
else
    echo "no samples folder $SAMPLES" >> "$NOTES"
fi

# 3. A fresh capture of a real workload on a loop device.
if [ "$CAPTURE" = 1 ]; then
    [ -d "$SRC_TREE" ] || die "no source tree $SRC_TREE (set SRC_TREE)"
    tar cf "$WORK/src.tar" -C "$(dirname "$SRC_TREE")" "$(basename "$SRC_TREE")" 2>/dev/null
    truncate -s 1G "$WORK/disk.img"
    LOOP=$(losetup -f --show "$WORK/disk.img")
    mkfs.ext4 -q "$LOOP"
    MNT=$WORK/mnt; mkdir -p "$MNT"
    devnum=$(cat "/sys/block/$(basename "$LOOP")/dev")
    maj=${devnum%%:*}; min=${devnum##*:}
    trace_instance bench
    for ev in block_rq_issue block_rq_complete; do
        echo "dev == $(( (maj << 20) | min ))" > "$INSTANCE/events/block/$ev/filter"
        echo 1 > "$INSTANCE/events/block/$ev/enable"
    done
    # blktrace (relay files in debugfs) alongside, where the kernel allows it.
    if [ ! -d /sys/kernel/debug/block ]; then
        mount -t debugfs none /sys/kernel/debug 2>/dev/null && DEBUGFS_MOUNTED_HERE=1
    fi
    mkdir -p "$WORK/bt"
    blktrace -d "$LOOP" -D "$WORK/bt" -o cap >"$WORK/bt.log" 2>&1 & BTPID=$!
    sleep 1
    if ! kill -0 "$BTPID" 2>/dev/null; then
        wait "$BTPID" 2>/dev/null || true; BTPID=""
        echo "fresh capture: blktrace could not run here ($(grep -m1 -i 'fail\|not' "$WORK/bt.log" || echo 'no reason given')), so no blktrace binary column for it; a blktrace binary costs at least 48 bytes per event (v7), 2-7 events per I/O" >> "$NOTES"
    fi
    echo 1 > "$INSTANCE/tracing_on"
    mount "$LOOP" "$MNT"
    tar xf "$WORK/src.tar" -C "$MNT"
    sync
    umount "$MNT"; mount "$LOOP" "$MNT"          # cold cache for this file system
    tar cf - -C "$MNT" . > /dev/null
    umount "$MNT"
    echo 0 > "$INSTANCE/tracing_on"
    sleep 1
    if [ -n "$BTPID" ]; then kill -INT "$BTPID" 2>/dev/null || true; wait "$BTPID" 2>/dev/null || true; BTPID=""; fi
    cat "$INSTANCE/trace" > "$WORK/cap.tracefs.txt"
    lost=$(cat "$INSTANCE"/per_cpu/cpu*/stats | awk '/^overrun/ { s += $2 } END { print s + 0 }')
    [ "$lost" = 0 ] || echo "fresh capture: $lost tracefs events overrun" >> "$NOTES"
    if ls "$WORK"/bt/cap.blktrace.* >/dev/null 2>&1; then
        (cd "$WORK/bt" && blkparse -i cap -o "$WORK/cap.blkparse.txt" >/dev/null 2>&1) || true
        bt_bytes=$(bytes "$WORK"/bt/cap.blktrace.*)
        convert_both cap "fresh capture" "$WORK/cap.tracefs.txt" && \
            row "fresh capture: untar $SRC_TREE + sync + read back, tracefs" "$WORK/cap.tmt" "$WORK/cap.19.tmt" "$(bytes "$WORK/cap.tracefs.txt")" "tracefs text" "$bt_bytes" "$WORK/cap.tracefs.txt" "$WORK/cap.blkparse.txt"
        convert_both capbt "fresh capture (blktrace)" "$WORK"/bt/cap.blktrace.* && \
            row "fresh capture, same I/O via blktrace" "$WORK/capbt.tmt" "$WORK/capbt.19.tmt" "$bt_bytes" "blktrace binary" "$bt_bytes" "$WORK/cap.blkparse.txt" "$WORK/cap.tracefs.txt"
    else
        convert_both cap "fresh capture" "$WORK/cap.tracefs.txt" && \
            row "fresh capture: untar $SRC_TREE + sync + read back, tracefs" "$WORK/cap.tmt" "$WORK/cap.19.tmt" "$(bytes "$WORK/cap.tracefs.txt")" "tracefs text" - "$WORK/cap.tracefs.txt"
    fi
fi

echo
echo "## Bytes per I/O"
echo
echo "| trace | I/Os | source | blktrace binary | fio iolog | zstd -19 of text forms (source / other) | zstd -19 of fio iolog | zstd -19 of CSV export (same fields as .tmt) | .tmt --level 19 | .tmt default level | < 4 B/I/O and < every zstd -19 text |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
cat "$ROWS"
echo
echo "## Where a .tmt's bytes go (bytes per I/O, each column of each chunk compressed alone with zstd -19; level-19 file)"
echo
echo "| trace | time | kind | offset | length | latency | stream | device | stored payload | header, frames, footer |"
echo "|---|---|---|---|---|---|---|---|---|---|"
cat "$COLS"
if [ -s "$NOTES" ]; then echo; sed 's/^/- /' "$NOTES"; fi
