#!/usr/bin/env bash
# Conversion at scale: a generated Alibaba-format file (device_id,opcode,
# offset,length,timestamp) of N records, converted plain and zstd-compressed,
# one core (taskset), records per second and peak RSS (/usr/bin/time -v).
# Several sizes show whether memory stays flat as the input grows.
#
#   bench/convert_scale.sh [SIZES...]      (default: 1000000 10000000)
#   TRACEMARK=path/to/tracemark  WORK=dir  (defaults: target/release, mktemp)
set -euo pipefail
cd "$(dirname "$0")/.."
TM=${TRACEMARK:-target/release/tracemark}
[ -x "$TM" ] || cargo build --release --quiet
WORK=${WORK:-$(mktemp -d)}
trap '[ -z "${KEEP:-}" ] && rm -rf "$WORK"' EXIT
SIZES=("${@:-1000000 10000000}")
command -v zstd >/dev/null || { echo "needs the zstd command"; exit 1; }
echo "size,input,bytes,seconds,records_per_s,peak_rss_kib"
for n in "${SIZES[@]}"; do
  csv=$WORK/alibaba-$n.csv
  # 64 volumes, 4-64 KiB, 2/5 writes, 100 µs apart, every 10th row 300 µs late
  # (%.0f: mawk's %d stops at 2^31-1, which made every timestamp the same).
  awk -v n="$n" 'BEGIN { srand(7); t = 1577808000000000;
    for (i = 0; i < n; i++) {
      v = int(rand() * 64); op = (rand() < 0.4) ? "W" : "R";
      len = 4096 * 2 ^ int(rand() * 5); off = int(rand() * 262144) * 4096;
      late = (i % 10 == 9) ? 300 : 0;
      printf "%d,%s,%.0f,%d,%.0f\n", v, op, off, len, t + i * 100 - late } }' > "$csv"
  zstd -q -3 -f "$csv" -o "$csv.zst"
  for input in "$csv" "$csv.zst"; do
    out=$WORK/out.tmt
    /usr/bin/time -v -o "$WORK/time.txt" taskset -c 0 "$TM" convert "$input" -o "$out" -q
    secs=$(awk -F': ' '/Elapsed/ { n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$WORK/time.txt")
    rss=$(awk -F': ' '/Maximum resident/ { print $2 }' "$WORK/time.txt")
    rate=$(awk -v n="$n" -v s="$secs" 'BEGIN { printf "%.0f", n / s }')
    echo "$n,$(basename "$input"),$(stat -c %s "$input"),$secs,$rate,$rss"
  done
  rm -f "$csv" "$csv.zst" "$WORK/out.tmt"
done
