#!/bin/bash
# Device check for issue 22 (run on a real GPU box, e.g. the `device` tool's machine):
# records NVML with the topology answers, runs doctor's torch script with the interconnect
# bench, and prints the laptop verdicts. Results in $OUT.
set -u
OUT=${OUT:-/tmp/interconnect_check}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 60 python3 bench/nvml_record.py "$OUT/nvml_topology_real.json"
timeout 200 python3 - "$OUT" <<'PY'
import json, sys
from remote_probe import preflight
from remote_probe.backends.nvml import NvmlBackend
from tui.core.checks.preflight import check_interconnect, check_filesystems
b = NvmlBackend()
topo = b.topology()
b.close()
torch = preflight.torch_facts(smoke=True)
facts = preflight.collect(smoke=False, urls=[])
json.dump({"topology": topo, "link": torch.get("link"), "smoke": torch.get("smoke"),
           "filesystems": facts["filesystems"]}, open(sys.argv[1] + "/doctor_link.json", "w"), indent=1)
for c in check_interconnect(topo, torch) + check_filesystems(facts):
    print("%-5s %-22s %s" % (c.verdict, c.name, c.reason))
PY
