#!/bin/bash
# Device check, part 2: preflight facts (torch build + matmul TFLOPS) and the dataloader
# hook on a real GPU training loop, with NVML utilization sampled alongside.
set -u
OUT=${OUT:-/tmp/gpu_check2}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
exec > >(tee -a "$OUT/log.txt") 2>&1
echo "== preflight facts"; date
timeout 180 python3 -c "
import json
from remote_probe import preflight_facts as preflight
from remote_probe.backends.nvml import NvmlBackend
b = NvmlBackend(); inv = b.inventory(); b.close()
f = preflight.collect(urls=[])
f['inventory'] = inv
json.dump(f, open('$OUT/preflight_h200.json', 'w'), indent=1)
print(json.dumps(f['torch'], indent=1))"

echo "== dataloader hook on the GPU"
timeout 240 python3 bench/dl_gpu.py "$OUT/dl_gpu.json"

echo "== hook overhead (torch on the device)"
timeout 120 python3 bench/hook_overhead.py --batches 20000 --rounds 5 2>&1 | grep -v Warn | tee "$OUT/hook_bench.txt"
echo "== one perf_counter() call here (the hook makes two per batch; gVisor may have no vDSO clock)"
python3 -c "import timeit; print('perf_counter %.2f us' % (timeit.timeit('p()', 'import time; p = time.perf_counter', number=200000) / 0.2))"
date
