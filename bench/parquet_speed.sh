#!/usr/bin/env bash
# Parquet export and import speed: a generated Alibaba-format file of N
# records converted to .tmt, then `export --to parquet` and `convert
# FILE.parquet` timed on one core (records/s, peak RSS). Needs the binary
# built with `cargo build --release --features parquet`.
#
#   bench/parquet_speed.sh [SIZES...]      (default: 1000000 10000000)
set -euo pipefail
cd "$(dirname "$0")/.."
TM=${TRACEMARK:-target/release/tracemark}
[ -x "$TM" ] || cargo build --release --features parquet --quiet
WORK=${WORK:-$(mktemp -d)}
trap 'rm -rf "$WORK"' EXIT
measure() { # LABEL N COMMAND...
  local label=$1 n=$2; shift 2
  /usr/bin/time -v -o "$WORK/time.txt" taskset -c 0 "$@"
  local secs rss
  secs=$(awk -F': ' '/Elapsed/ { k = split($2, p, ":"); s = 0; for (i = 1; i <= k; i++) s = s * 60 + p[i]; print s }' "$WORK/time.txt")
  rss=$(awk -F': ' '/Maximum resident/ { print $2 }' "$WORK/time.txt")
  echo "$n,$label,$secs,$(awk -v n="$n" -v s="$secs" 'BEGIN { printf "%.0f", n / s }'),$rss"
}
echo "size,step,seconds,records_per_s,peak_rss_kib"
[ $# -gt 0 ] || set -- 1000000 10000000
for n in "$@"; do
  awk -v n="$n" 'BEGIN { srand(7); t = 1577808000000000;
    for (i = 0; i < n; i++) printf "%d,%s,%d,%d,%d\n", int(rand() * 64),
      (rand() < 0.4) ? "W" : "R", int(rand() * 262144) * 4096, 4096 * 2 ^ int(rand() * 5), t + i * 100 }' > "$WORK/in.csv"
  "$TM" convert "$WORK/in.csv" -o "$WORK/a.tmt" -q
  measure export "$n" "$TM" export "$WORK/a.tmt" --to parquet -o "$WORK/a.parquet"
  measure import "$n" "$TM" convert "$WORK/a.parquet" -o "$WORK/b.tmt" -q
  echo "# $n records: .tmt $(stat -c %s "$WORK/a.tmt") B, .parquet $(stat -c %s "$WORK/a.parquet") B"
  rm -f "$WORK"/*
done
