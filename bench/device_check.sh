#!/bin/bash
# One device run (the `device` tool's H200): both parts of the GPU check, packed into two files
# under $OUT (the tool brings back at most 8): the log, and a tarball of every result file.
# The device has no asyncssh, so the probe zipapp is built here first and carried:
#   echo /.devcarry/ >> .git/info/exclude; mkdir -p .devcarry
#   .venv/bin/python -c "from tui.remote.probe.bundle import build_probe; \
#       open('.devcarry/probe.pyz', 'wb').write(build_probe()[0])"
#   device run: command "timeout 470 bash bench/device_check.sh", carry [".devcarry"]
# About 5 minutes on the H200 (2026-12-04: 304 s).
set -u
FINAL=${OUT:-/tmp/device_check}
mkdir -p "$FINAL"
W=$(mktemp -d)
OUT=$W/part1 bash bench/gpu_check.sh
OUT=$W/part2 bash bench/gpu_check2.sh
cat "$W"/part1/log.txt "$W"/part2/log.txt > "$FINAL/log.txt"
tar -C "$W" -czf "$FINAL/results.tar.gz" part1 part2
