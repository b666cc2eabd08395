# shellcheck shell=bash
# The shell library of bench/, bench/validity/ and traces/capture/ (sourced,
# not run). Sourced as is (the bench/ scripts), it also sets the bench
# environment: TRACEMARK the binary to measure, and a results database of the
# benches' own. With TM_LIB_ONLY=1 set before sourcing (the capture scripts,
# drives.sh), it defines the functions and BENCH_ROOT only and leaves the
# environment as it is.

# Absolute path of the repository root.
BENCH_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ "${TM_LIB_ONLY:-0}" != 1 ]; then
    # TRACEMARK_BIN: measure that binary (e.g. a copy of an older build, for an
    # A/B of two commits) instead of building the tree's.
    # Where cargo builds (CARGO_TARGET_DIR when set, as cargo itself does).
    BENCH_TARGET=${CARGO_TARGET_DIR:-$BENCH_ROOT/target}
    TRACEMARK=${TRACEMARK_BIN:-$BENCH_TARGET/release/tracemark}
    # The runs a bench replays go to a results database of the benches' own
    # (target/bench-data/tracemark/results.db), never the user's.
    export XDG_DATA_HOME=${BENCH_DATA_HOME:-$BENCH_ROOT/target/bench-data}
    unset TRACEMARK_DB
fi

# die MESSAGE: MESSAGE on stderr after the script's name; exit status 1.
die() { echo "$(basename "$0"): $*" >&2; exit 1; }
# log MESSAGE: MESSAGE on stderr after the script's name.
log() { echo "$(basename "$0"): $*" >&2; }

# tm_result FILE FIELD... | tm_result TABLE ARGS...: figures out of result,
# fio, info, CPU and lateness JSON files (bench/tm_result.py says which).
tm_result() { python3 "$BENCH_ROOT/bench/tm_result.py" "$@"; }

# need TOOL [APT-PACKAGE]: stop with an install hint when TOOL is missing.
need() {
    command -v "$1" >/dev/null 2>&1 || die "$1 is not installed (apt-get install -y ${2:-$1})"
}

# need_root [WHY]: stop unless running as root (WHY: what needs it).
need_root() { [ "$(id -u)" -eq 0 ] || die "must run as root${1:+ ($1)}"; }

# need_gnu_time: /usr/bin/time (GNU time, for its -v and -f).
need_gnu_time() {
    [ -x /usr/bin/time ] || die "/usr/bin/time is not installed (apt-get install -y time)"
}

# work_in_scratch: WORK, a scratch directory under /var/tmp removed on exit,
# made the current directory (for scripts with nothing else to clean up).
work_in_scratch() {
    WORK=$(mktemp -d /var/tmp/tracemark-bench.XXXXXX)
    trap 'rm -rf "$WORK"' EXIT
    trap 'exit 130' INT TERM
    cd "$WORK" || die "cannot enter $WORK"
}

# Builds the release binary (quietly) so every script measures the current tree;
# BENCH_NO_BUILD=1 measures the binary already in target/release instead.
build_tracemark() {
    if [ -n "${TRACEMARK_BIN:-}" ]; then
        [ -x "$TRACEMARK" ] || die "TRACEMARK_BIN=$TRACEMARK is not an executable"
        return
    fi
    if [ "${BENCH_NO_BUILD:-0}" = 1 ] && [ -x "$TRACEMARK" ]; then return; fi
    (cd "$BENCH_ROOT" && cargo build --release -q) || die "cargo build --release failed"
    [ -x "$TRACEMARK" ] || die "no $TRACEMARK after the build"
}

# median NUMBERS...: the median (mean of the two middle values for an even count).
median() {
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "nan"; exit }
        if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# ratio A B: A / B to 3 decimals.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "nan"; else printf "%.3f\n", a / b }'; }

# Mounts tracefs on TRACEFS (default /sys/kernel/tracing; drives.sh mounts a
# private one) when it is not mounted there; TRACEFS_MOUNTED_HERE=1 says to
# unmount it.
TRACEFS=${TRACEFS:-/sys/kernel/tracing}
TRACEFS_MOUNTED_HERE=0
ensure_tracefs() {
    mkdir -p "$TRACEFS"
    if [ ! -e "$TRACEFS/trace" ] && ! mountpoint -q "$TRACEFS"; then
        mount -t tracefs nodev "$TRACEFS" || die "cannot mount tracefs on $TRACEFS"
        TRACEFS_MOUNTED_HERE=1
    fi
}
release_tracefs() {
    if [ "$TRACEFS_MOUNTED_HERE" = 1 ]; then
        umount "$TRACEFS" 2>/dev/null || true
        TRACEFS_MOUNTED_HERE=0
    fi
}

# A tracing instance of this script's own, so that other tracing users are
# not disturbed: INSTANCE is its directory (empty until trace_instance makes
# it), DEVNUM the MAJ:MIN trace_device filters on.
INSTANCE=""
TRACEFS_PRIVATE=""
DEVNUM=""

# trace_instance NAME [private]: makes the instance tracemark-NAME-PID with a
# 64 MiB buffer per CPU, in $TRACEFS (mounted when it is not), or with
# `private` in tracefs mounted at $WORK/tracefs (the same tracing state, but
# another user unmounting /sys/kernel/tracing cannot take the instance away).
trace_instance() {
    if [ "${2:-}" = private ]; then
        mkdir "$WORK/tracefs"
        mount -t tracefs nodev "$WORK/tracefs" || die "cannot mount tracefs"
        TRACEFS_PRIVATE=$WORK/tracefs
        INSTANCE=$TRACEFS_PRIVATE/instances/tracemark-$1-$$
    else
        ensure_tracefs
        INSTANCE=$TRACEFS/instances/tracemark-$1-$$
    fi
    mkdir "$INSTANCE"
    echo 65536 > "$INSTANCE/buffer_size_kb"
}

# trace_instance_release: stops and removes the instance and unmounts what
# trace_instance mounted; for cleanup traps (never fails).
trace_instance_release() {
    if [ -n "$INSTANCE" ] && [ -d "$INSTANCE" ]; then
        echo 0 > "$INSTANCE/tracing_on" 2>/dev/null || true
        echo 0 > "$INSTANCE/events/enable" 2>/dev/null || true
        rmdir "$INSTANCE" 2>/dev/null || true
    fi
    if [ -n "$TRACEFS_PRIVATE" ]; then umount "$TRACEFS_PRIVATE" 2>/dev/null || true; fi
    release_tracefs
}

# trace_device DEV: has the instance trace block:block_bio_queue on DEV
# (/dev/NAME) only; sets DEVNUM.
trace_device() {
    local num maj min
    num=$(cat "/sys/class/block/$(basename "$1")/dev")
    maj=${num%%:*}; min=${num##*:}
    echo 0 > "$INSTANCE/events/block/block_bio_queue/enable"
    echo "dev == $(( (maj << 20) | min ))" > "$INSTANCE/events/block/block_bio_queue/filter"
    echo 1 > "$INSTANCE/events/block/block_bio_queue/enable"
    # shellcheck disable=SC2034 # for the sourcing script
    DEVNUM=$num
}

# traced NAME CMD...: runs CMD with the instance tracing into $WORK/NAME.trace,
# warning when the buffer lost events.
traced() {
    local name=$1; shift
    echo > "$INSTANCE/trace"
    echo 1 > "$INSTANCE/tracing_on"
    "$@"
    echo 0 > "$INSTANCE/tracing_on"
    cat "$INSTANCE/trace" > "$WORK/$name.trace"
    local lost
    lost=$(cat "$INSTANCE"/per_cpu/cpu*/stats | awk '/^overrun/ { s += $2 } END { print s + 0 }')
    [ "$lost" = 0 ] || echo "warning: $lost tracefs events overrun in $name" >&2
}

# Generates a blktrace binary file of at least RECORDS records (one per-CPU file,
# OUT.blktrace.0) by repeating the shared sample capture with shifted times, the
# way bench/blktrace_speed.sh does. Usage: make_blktrace OUT_BASENAME RECORDS.
BLKTRACE_SAMPLE=${BLKTRACE_SAMPLE:-/work/shared/samples/blktrace-binary/takeoverjp__blktrace_viewer__sample.blktrace.0}
make_blktrace() {
    [ -f "$BLKTRACE_SAMPLE" ] || die "no source capture $BLKTRACE_SAMPLE (set BLKTRACE_SAMPLE to a little-endian v7 NAME.blktrace.0)"
    if [ "${BENCH_NO_BUILD:-0}" != 1 ] || [ ! -x "$BENCH_TARGET/release/examples/blktrace_speed" ]; then
        (cd "$BENCH_ROOT" && cargo build -q --release -p recorder --example blktrace_speed) || die "building the blktrace_speed example failed"
    fi
    "$BENCH_TARGET/release/examples/blktrace_speed" make "$BLKTRACE_SAMPLE" "$1.blktrace.0" "$2" >/dev/null \
        || die "generating $1.blktrace.0 failed"
}

# zram_add SIZE: a private zram device of SIZE (never /dev/zram0's own);
# prints its number. Needs root.
zram_add() {
    [ -e /sys/class/zram-control/hot_add ] || modprobe zram || die "no zram module"
    local id
    id=$(cat /sys/class/zram-control/hot_add) || die "zram hot_add failed"
    echo "$1" > "/sys/block/zram$id/disksize" || die "cannot size /dev/zram$id"
    for _ in $(seq 50); do [ -b "/dev/zram$id" ] && break; sleep 0.1; done
    echo "$id"
}

# A zram device of this script's own: ZRAM_N its number, ZRAM its node
# (empty until zram_new makes it; cleanup: [ -z "$ZRAM_N" ] || zram_remove "$ZRAM_N").
ZRAM_N=""
ZRAM=""

# zram_new [SPAN_MIB]: makes the device; with SPAN_MIB, sizes it SPAN_MIB +
# 64 MiB and fills its first SPAN_MIB MiB with random data (else the caller
# sizes it). Needs root.
zram_new() {
    [ -e /sys/class/zram-control/hot_add ] || modprobe zram 2>/dev/null || true
    [ -e /sys/class/zram-control/hot_add ] || die "no /sys/class/zram-control (modprobe zram)"
    ZRAM_N=$(cat /sys/class/zram-control/hot_add)
    ZRAM=/dev/zram$ZRAM_N
    for _ in 1 2 3 4 5; do [ -b "$ZRAM" ] && break; sleep 0.2; done
    if [ -n "${1:-}" ]; then
        echo $((($1 + 64) << 20)) > "/sys/block/zram$ZRAM_N/disksize"
        dd if=/dev/urandom of="$ZRAM" bs=1M count="$1" oflag=direct status=none
    fi
}

# zram_reset ID: resets a zram device, retried for up to 5 s: right after a
# program that used it exits, its io_uring teardown can still hold the
# device open for a moment (fio's rings keep their files until then), and
# the reset fails with EBUSY.
zram_reset() {
    for _ in $(seq 50); do
        echo 1 2>/dev/null > "/sys/block/zram$1/reset" && return 0
        sleep 0.1
    done
    die "cannot reset /dev/zram$1 (still busy after 5 s)"
}

# zram_remove ID: resets and removes a device made by zram_add (retried: a
# device still being released refuses for a moment).
zram_remove() {
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        echo 1 > "/sys/block/zram$1/reset" 2>/dev/null || true
        echo "$1" > /sys/class/zram-control/hot_remove 2>/dev/null && return 0
        sleep 0.5
    done
}

# rounds_setup NAME BIN...: the start of an A/B rounds script (qd_rounds.sh,
# rate_rounds.sh) once its options are read: checks that each BIN runs and
# that the tools are there, makes WORK and SHM (NAME in their names; removed
# on exit, with the devices), SHM/random of SPAN_MIB MiB, and for KIND zram
# the device ZRAM_ID that fresh_device readies.
rounds_setup() {
    local name=$1 b
    shift
    for b in "$@"; do [ -x "$b" ] || die "$b is not an executable"; done
    need_root
    need fio
    need python3
    need losetup
    WORK=$(mktemp -d "/var/tmp/tracemark-$name.XXXXXX")
    SHM=$(mktemp -d "/dev/shm/tracemark-$name.XXXXXX")
    ZRAM_ID=
    LOOP=
    trap rounds_cleanup EXIT
    trap 'exit 130' INT TERM
    head -c $((SPAN_MIB << 20)) /dev/urandom > "$SHM/random"
    if [ "$KIND" = zram ]; then ZRAM_ID=$(zram_add $(((SPAN_MIB + 64) << 20))); fi
}
rounds_cleanup() {
    [ -z "$LOOP" ] || losetup -d "$LOOP" 2>/dev/null || true
    [ -z "$ZRAM_ID" ] || zram_remove "$ZRAM_ID"
    rm -rf "$WORK" "$SHM"
}

# fresh_device zram|loop: a private device in a known state for an A/B
# round (qd_rounds.sh, rate_rounds.sh): the zram device ZRAM_ID reset, sized
# SPAN_MIB + 64 MiB and filled with $SHM/random; or a new loop device (LOOP,
# the previous one detached) over a fresh copy of it in SHM, SPAN_MIB +
# 200 MiB. Sets DEV.
fresh_device() {
    if [ "$1" = zram ]; then
        zram_reset "$ZRAM_ID"
        echo $(((SPAN_MIB + 64) << 20)) > "/sys/block/zram$ZRAM_ID/disksize"
        dd if="$SHM/random" of="/dev/zram$ZRAM_ID" bs=1M oflag=direct status=none
        DEV=/dev/zram$ZRAM_ID
    else
        [ -z "$LOOP" ] || losetup -d "$LOOP"
        LOOP=
        rm -f "$SHM/backing"
        cp "$SHM/random" "$SHM/backing"
        truncate -s $(((SPAN_MIB + 200) << 20)) "$SHM/backing"
        LOOP=$(losetup -f --show "$SHM/backing")
        # shellcheck disable=SC2034 # for the sourcing script
        DEV=$LOOP
    fi
}

# host_busy_pct SECONDS: how busy the host's CPUs were over SECONDS, in
# percent of all of them (everything but idle and iowait in /proc/stat).
host_busy_pct() {
    local a b
    a=$(head -1 /proc/stat)
    sleep "$1"
    b=$(head -1 /proc/stat)
    awk -v a="$a" -v b="$b" 'BEGIN {
        n = split(a, x, " "); split(b, y, " ")
        for (i = 2; i <= n; i++) total += y[i] - x[i]
        idle = (y[5] - x[5]) + (y[6] - x[6])
        printf "%d\n", (total > 0) ? 100 * (total - idle) / total + 0.5 : 0 }'
}

# wait_quiet MAX_PCT TIMEOUT_S: returns once the host's CPUs were at most
# MAX_PCT % busy over 3 s, waiting up to TIMEOUT_S. Timed runs of CPU-bound
# tasks started on a host that is still busy with other work (a build, a
# second suite) take that work's CPU time into their own.
wait_quiet() {
    local max=$1 timeout=$2 start=$SECONDS busy
    while :; do
        busy=$(host_busy_pct 3)
        [ "$busy" -le "$max" ] && return 0
        [ $((SECONDS - start)) -lt "$timeout" ] ||
            die "the host stayed busy for $timeout s ($busy % of its CPUs over 3 s; at most $max % wanted)"
        log "waiting for a quiet host: $busy % of its CPUs busy over 3 s (at most $max %)"
        sleep 7
    done
}

# Free page reporting (a virtio-balloon guest's page_reporting module): memory
# the guest frees goes back to the hypervisor within seconds, and the next
# touch of it faults it in again on the host. hold_page_reporting reports
# freed memory only after 300 s free (up to 16 GiB waiting);
# release_page_reporting (call it from the EXIT trap) puts the settings
# back. A no-op where the module is absent. Sets PAGE_REPORTING to what is in
# effect ("held", "as-is" or "absent").
PAGE_REPORTING_DIR=/sys/module/page_reporting/parameters
SAVED_REPORTING=()
# shellcheck disable=SC2034 # for the sourcing script
PAGE_REPORTING=absent
hold_page_reporting() {
    [ -w "$PAGE_REPORTING_DIR/min_free_ms" ] && [ -w "$PAGE_REPORTING_DIR/max_waiting_mib" ] || return 0
    SAVED_REPORTING=("min_free_ms=$(cat "$PAGE_REPORTING_DIR/min_free_ms")"
        "max_waiting_mib=$(cat "$PAGE_REPORTING_DIR/max_waiting_mib")")
    { echo 300000 > "$PAGE_REPORTING_DIR/min_free_ms" && echo 16384 > "$PAGE_REPORTING_DIR/max_waiting_mib"; } ||
        die "could not hold freed memory back from page reporting ($PAGE_REPORTING_DIR)"
    # shellcheck disable=SC2034 # for the sourcing script
    PAGE_REPORTING=held
}
release_page_reporting() {
    local kv
    for kv in "${SAVED_REPORTING[@]}"; do echo "${kv#*=}" > "$PAGE_REPORTING_DIR/${kv%%=*}"; done
    SAVED_REPORTING=()
}
