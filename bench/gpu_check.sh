#!/bin/bash
# The device check: run on a machine with a real NVIDIA GPU (the `device` tool's H200).
# Records NVML answers idle and under load (fixtures for tests/support/nvml_replay.py), captures
# nvidia-smi CSV for the smi backend, runs the probe zipapp with its bundled pynvml, and
# benchmarks the NVML-backed sampler and daemon. Results go to $OUT (8 files at most).
set -u
OUT=${OUT:-/tmp/gpu_check}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
LOG=$OUT/log.txt
exec > >(tee -a "$LOG") 2>&1
echo "== env"; date
{ nvidia-smi; python3 --version; python3 -c "import pynvml, psutil; print('pynvml', pynvml.__file__)";
  python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda, torch.cuda.is_available())"; } > "$OUT/env.txt" 2>&1
tail -3 "$OUT/env.txt"

echo "== record NVML, idle"
timeout 60 python3 bench/nvml_record.py "$OUT/nvml_h200_idle.json"

echo "== GPU load: bf16 matmuls + a 20 GiB allocation for 45 s"
timeout 90 python3 - <<'PY' &
import time, torch
x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
hold = torch.empty(20 * 1024**3, dtype=torch.uint8, device="cuda")
t = time.time()
while time.time() - t < 45:
    for _ in range(20):
        y = x @ x
    torch.cuda.synchronize()
PY
LOAD=$!
sleep 10
echo "== record NVML, busy (load pid $LOAD)"
timeout 60 python3 bench/nvml_record.py "$OUT/nvml_h200_busy.json"

echo "== nvidia-smi CSV (smi backend)"
{
S=index,name,uuid,pci.bus_id,memory.total,power.limit,clocks.max.sm,clocks.max.mem,mig.mode.current
D=utilization.gpu,utilization.memory,memory.used,temperature.gpu,power.draw,clocks.sm,clocks.mem,pstate,fan.speed,clocks_event_reasons.active,ecc.errors.uncorrected.volatile.total
echo "# static"; nvidia-smi --query-gpu=$S --format=csv,noheader,nounits
echo "# dynamic"; nvidia-smi --query-gpu=$D --format=csv,noheader,nounits
echo "# apps"; nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory --format=csv,noheader,nounits
echo "# driver"; nvidia-smi --query-gpu=driver_version --format=csv,noheader,nounits
echo "# smi backend"
timeout 30 python3 -c "
from remote_probe.backends.smi import SmiBackend
b = SmiBackend(); print(b.inventory()); print(b.sample())"
} > "$OUT/smi.txt" 2>&1
cat "$OUT/smi.txt"

echo "== probe zipapp with bundled pynvml, under load"
# the device has no asyncssh (tui.remote imports it): a zipapp built here travels in .devcarry
if [ -f .devcarry/probe.pyz ]; then cp .devcarry/probe.pyz /tmp/probe.pyz; else
python3 -c "from tui.remote.probe.bundle import build_probe; d, s = build_probe(); open('/tmp/probe.pyz', 'wb').write(d); print(len(d), s)"; fi
(cd / && timeout 30 python3 /tmp/probe.pyz once > "$OUT/probe_once_busy.json"); echo "exit $?"
python3 -c "
import json; d = json.load(open('$OUT/probe_once_busy.json'))
from remote_probe import wire
print('backend', d['inventory']['backend'], 'notes', d['inventory'].get('notes'))
print([wire.gpu_dict(g) for g in d['sample']['gpus']])
print([wire.proc_dict(p) for p in d['sample']['procs']], d['proc_meta'])"

echo "== benchmark with the real GPU (NVML backend)"
timeout 120 python3 bench/probe_overhead.py --nvml --no-ssh --ticks 60 --json "$OUT/bench_nvml.json"
wait $LOAD
echo "== done"; date

echo "== daemon RSS: how much is NVML's own library (python, + pynvml, + nvmlInit)"
timeout 30 python3 -c "
def rss():
    return int([l for l in open('/proc/self/status') if l.startswith('VmRSS')][0].split()[1]) / 1024
a = rss(); import pynvml; b = rss(); pynvml.nvmlInit(); c = rss()
h = pynvml.nvmlDeviceGetHandleByIndex(0); pynvml.nvmlDeviceGetUtilizationRates(h); d = rss()
print('python %.1f MB, +import pynvml %.1f, +nvmlInit %.1f, +first query %.1f' % (a, b - a, c - b, d - c))"
