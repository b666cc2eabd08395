#!/usr/bin/env bash
# gen_alibaba.sh [ROWS] [SPACING_US] > io_traces.csv
#
# A multi-volume trace in Alibaba Cloud's block-trace format
# (device_id,opcode,offset,length,timestamp; bytes, µs since the epoch, no
# header): ROWS rows (default 100000) over 8 volumes with 1..8 shares of the
# rows, 4-64 KiB reads (60 %) and writes on 4 KiB boundaries within 64 MiB
# per volume, SPACING_US µs apart (default 50) and up to 300 µs out of
# order, as the public files are. Deterministic (fixed seed).
set -euo pipefail
awk -v rows="${1:-100000}" -v sp="${2:-50}" 'BEGIN {
    # %.0f, not %d: mawk prints integers past 2^31 as 2147483647.
    srand(7); split("3 11 12 40 41 77 500 4294967295", vol, " ")
    split("4096 8192 16384 65536", len, " ")
    t0 = 1577808000000000
    for (i = 0; i < rows; i++) {
        p = int(rand() * 36); v = 1; while (p >= v) { p -= v; v++ }
        op = rand() < 0.6 ? "R" : "W"
        printf "%s,%s,%.0f,%s,%.0f\n", vol[v], op, int(rand() * 16384) * 4096, len[int(rand() * 4) + 1], t0 + i * sp + int(rand() * 300)
    }
}'
