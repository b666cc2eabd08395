# shellcheck shell=bash
# Shared by the office-* and publishing-draw scripts: prepares the input
# document once (untraced), restores it before each capture, and traces one
# headless LibreOffice session (lo_office.py run-KIND).
# Usage (from a script): office_trace KIND INPUT NAME CATEGORY DESCRIPTION
office_trace() {
  local kind=$1 input=$2 name=$3 category=$4 description=$5
  local d=/home/bench/$name
  root_attach
  install_helpers
  prepare_photos
  if [ ! -f "$MNT$d/original/$input" ]; then
    as_bench python3 /home/bench/tm/lo_office.py "prepare-$kind" "$d/original"
  fi
  # Untraced: a fresh copy of the input, no output of an earlier run.
  as_bench sh -c "rm -rf $d/work && mkdir -p $d/work && cp $d/original/$input $d/work/"
  capture_trace "$name" "$category" "$description" \
    sh -c "python3 /home/bench/tm/lo_office.py run-$kind $d/work && sync"
}
