#!/usr/bin/env bash
# What the CPUs' idle states do to a trace's score: `--cpu-idle os` and
# `--cpu-idle poll` alternated run by run on one private zram device, after
# one replay that preconditions it, then per policy the scores, median,
# spread ((max - min) / median) and mean access time. An A/B of one binary
# under two options: bench/ab_pairs.sh does the runs and the table.
#
#   bench/cpu_idle_pairs.sh [-n PAIRS] [--trace T.tmt] [--zram SIZE] [-- REPLAY-ARGS...]
#
#   -n PAIRS      alternating os/poll pairs (default 4)
#   --trace T     the trace (default traces/game-launch-0ad.tmt: sparse reads,
#                 where every I/O may find its CPU idle)
#   --zram SIZE   the private zram's size (default 4G; never /dev/zram0)
#   REPLAY-ARGS   passed to every `tracemark replay` (default: --passes 3)
#
# Needs root (zram, and /dev/cpu_dma_latency for poll).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
build_tracemark
exec bash "$BENCH_ROOT/bench/ab_pairs.sh" "$TRACEMARK" "$TRACEMARK" \
    --args-a "--cpu-idle os" --args-b "--cpu-idle poll" --names os,poll "$@"
