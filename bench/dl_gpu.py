"""The dataloader hook on a real GPU: a small model trained from a slow dataset with
num_workers=0 (starved) and then with workers (fed), NVML utilization sampled alongside,
and the diagnosis gputui would show; then the fed run again without the hook, so the time
from the loop's end to the process's exit can be compared (does the hook hold up exit?).
Stats and utilization are read up to the loop's end: after it the loader is idle by design.
Writes a JSON report.

    python bench/dl_gpu.py out.json      (needs a CUDA GPU and torch)
"""

import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from remote_probe import dataloader, dlhook, procfs  # noqa: E402
from remote_probe.backends.nvml import NvmlBackend  # noqa: E402
from tui.core.checks.diagnosis import LoaderFacts, diagnose  # noqa: E402

TRAIN = r"""
import sys, time, torch
from torch import nn
from torch.utils.data import DataLoader, Dataset
class Images(Dataset):
    def __init__(self, delay): self.delay = delay
    def __len__(self): return 10**7
    def __getitem__(self, i):
        t = time.perf_counter()
        while time.perf_counter() - t < self.delay:  # decode/augment cost, CPU-bound
            pass
        return torch.randn(3, 64, 64), i % 10
workers, seconds, done_file = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
model = nn.Sequential(nn.Conv2d(3, 256, 3, padding=1), nn.ReLU(), nn.Conv2d(256, 256, 3, padding=1),
                      nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(Images(0.002), batch_size=64, num_workers=workers, pin_memory=True,
                    persistent_workers=workers > 0)
end = time.time() + seconds
for x, y in loader:
    x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    torch.cuda.synchronize()
    if time.time() > end:
        break
with open(done_file, "w") as f:  # the loop's end, for the exit delay
    f.write(repr(time.time()))
"""


def cpu_ticks(pid):
    """utime + stime of a process in clock ticks (the probe's own /proc reader), None once it
    is gone."""
    st = procfs.parse_pid_stat_full(procfs.read_text("/proc/%d/stat" % pid))
    return None if st is None else st[4]


def run(workers, seconds, state, hooked=True):
    env = dict(os.environ)
    if hooked:
        env.update(dlhook.dlhook_env(state, env.get("PYTHONPATH")))
    script = os.path.join(state, "train.py")
    done = os.path.join(state, "loop-done-%d-%d" % (workers, hooked))
    with open(script, "w") as f:
        f.write(TRAIN)
    nv = NvmlBackend()
    util, stats, worker_cpu = [], [], []  # (wall time, value)
    hz, before = os.sysconf("SC_CLK_TCK"), {}
    p = subprocess.Popen([sys.executable, script, str(workers), str(seconds), done], env=env)
    while p.poll() is None:
        time.sleep(1.0)
        gpus, _ = nv.sample()
        util.append((time.time(), gpus[0]["util"]))
        stats.extend(s for s in dataloader.read_hook_stats(dataloader.dl_dir(state)) if s["pid"] == p.pid)
        pids = stats[-1].get("worker_pids", []) if stats else []
        now = {pid: cpu_ticks(pid) for pid in pids}  # each worker's CPU % over the last second
        worker_cpu.append((time.time(), [None if now[pid] is None or pid not in before else
                                         round(100.0 * (now[pid] - before[pid]) / hz) for pid in pids]))
        before = {pid: t for pid, t in now.items() if t is not None}
    exited = time.time()
    nv.close()
    loop_end = float(open(done).read()) if os.path.exists(done) else exited
    util = [u for t, u in util if t <= loop_end]
    during = [s for s in stats if s["t"] <= loop_end]
    last = during[-1] if during else {}
    cpu = [c for t, c in worker_cpu if t <= loop_end]
    facts = LoaderFacts(wait_fraction=last.get("wait_fraction"), num_workers=last.get("num_workers"),
                        gpu_util=util[-10:], worker_cpu=cpu[-1] if cpu else (), ncpu=os.cpu_count(),
                        box_cpu=None, pin_memory=last.get("pin_memory"))
    d = diagnose(facts)
    return {"workers": workers, "hooked": hooked, "exit": p.returncode,
            "exit_after_loop_s": round(exited - loop_end, 1), "gpu_util": util, "last_stats": last,
            "worker_cpu": cpu[-1] if cpu else [],
            "diagnosis": {"verdict": d.verdict, "cause": d.cause, "line": d.line}}


def main(out):
    state = tempfile.mkdtemp(prefix="gputui-dl-")
    dlhook.install_dlhook(state)
    report = {"starved": run(0, 25, state), "fed": run(12, 25, state),
              "fed_unhooked": run(12, 25, state, hooked=False)}
    with open(out, "w") as f:
        json.dump(report, f, indent=1)
    for k, r in report.items():
        s = r["last_stats"]
        print("%s: workers=%d wait=%s batches/s=%s gpu util mean=%.0f%% exit %.1f s after the loop -> %s" % (
            k, r["workers"], s.get("wait_fraction"), s.get("batches_per_s"),
            sum(r["gpu_util"][-10:]) / max(1, len(r["gpu_util"][-10:])), r["exit_after_loop_s"],
            r["diagnosis"]["line"]))


if __name__ == "__main__":
    main(sys.argv[1])
