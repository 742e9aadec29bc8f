#!/bin/bash
# One device run (the `device` tool's H200): both parts of the GPU check, packed into two files
# under $OUT (the tool brings back at most 8): the log, and a tarball of every result file.
set -u
FINAL=${OUT:-/tmp/device_check}
mkdir -p "$FINAL"
W=$(mktemp -d)
OUT=$W/part1 bash bench/gpu_check.sh
OUT=$W/part2 bash bench/gpu_check2.sh
cat "$W"/part1/log.txt "$W"/part2/log.txt > "$FINAL/log.txt"
tar -C "$W" -czf "$FINAL/results.tar.gz" part1 part2
