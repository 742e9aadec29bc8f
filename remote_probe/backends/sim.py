"""Simulator backend: a scripted GPU box for the demo, the tests and evaluation on
machines without a GPU. It produces the same schema as NVML.

A scenario (JSON, shipped in ``remote_probe/scenarios`` or given as a path) lists
GPUs, a load pattern per GPU, and processes. Processes are *real*: the simulator
starts small dummy programs so their pid, user, command line, CPU and RSS come from
the real /proc, exactly like a training job would.
"""

import json
import math
import os
import pkgutil
import subprocess
import sys
import time

from remote_probe.procfs.reader import PROC
from remote_probe.watch.scope import own_scope, scope_of
from remote_probe.backends.backend_error import BackendError
from remote_probe.scenario_files import scenario_names

# The dummy job: lives as long as the daemon that started it, optionally burns a bit
# of CPU so the process table shows a realistic CPU column.
WORKER = r'''
import json, os, sys, time
ppid = os.getppid()
busy = float(os.environ.get("GPUTUI_SIM_CPU", "0"))
dl = json.loads(os.environ.get("GPUTUI_SIM_DL") or "null")  # simulated dataloader stats
out = os.environ.get("GPUTUI_DLHOOK_DIR")
n = 0
while os.getppid() == ppid:
    t = time.time()
    while busy and time.time() - t < busy * 0.5:
        pass
    time.sleep(0.5 * (1 - busy))
    n += 1
    if dl and out and n % 2 == 0:
        stats = dict(dl, pid=os.getpid(), t=time.time(), batches=n * 5, samples=n * 5 * dl.get("batch", 64))
        try:
            os.makedirs(out, exist_ok=True)
            with open(os.path.join(out, "dl-%d.json.tmp" % os.getpid()), "w") as f:
                json.dump(stats, f)
            os.replace(os.path.join(out, "dl-%d.json.tmp" % os.getpid()),
                       os.path.join(out, "dl-%d.json" % os.getpid()))
        except OSError:
            pass
'''


def load_scenario(name):
    if os.sep in name or name.endswith(".json"):
        try:
            with open(os.path.expanduser(name), "r", encoding="utf-8") as f:
                text = f.read()
        except OSError as exc:
            raise BackendError("cannot read scenario %s: %s" % (name, exc.strerror))
    else:
        try:
            data = pkgutil.get_data("remote_probe", "scenarios/%s.json" % name)
        except OSError:
            data = None
        if data is None:
            raise BackendError("unknown scenario %r (shipped: %s)"
                               % (name, ", ".join(scenario_names())))
        text = data.decode("utf-8")
    try:
        scenario = json.loads(text)
    except ValueError as exc:
        raise BackendError("scenario %s is not valid JSON: %s" % (name, exc))
    if not isinstance(scenario, dict) or not isinstance(scenario.get("gpus", []), list):
        raise BackendError("scenario %s: expected an object with a 'gpus' list" % name)
    return scenario


def _noise(seed, t):
    """Deterministic smooth noise in [-1, 1]."""
    return (math.sin(t * 0.37 + seed * 1.7) * 0.6 + math.sin(t * 1.3 + seed * 0.3) * 0.4)


def utilization(pattern, t, seed=0):
    """GPU utilization % at time t (seconds since start) for a load pattern."""
    kind = pattern.get("kind", "steady")
    if kind == "idle":
        return 0
    if kind == "steady":
        return max(0, min(100, int(pattern.get("level", 95) + 3 * _noise(seed, t))))
    if kind == "starved":
        # Data-bound training: short bursts of compute between waits for batches.
        period = pattern.get("period", 4)
        phase = (t % period) / period
        high = phase < pattern.get("duty", 0.35)
        return max(0, min(100, int((97 if high else 3) + 2 * _noise(seed, t))))
    if kind == "training":
        # Busy, with an evaluation/checkpoint dip every `every` seconds.
        every = pattern.get("every", 30)
        if t % every < pattern.get("dip", 3):
            return int(10 + 5 * abs(_noise(seed, t)))
        return max(0, min(100, int(pattern.get("level", 93) + 5 * _noise(seed, t))))
    if kind == "pulse":
        # Short busy bursts (an eval job every few minutes): resets idle windows.
        return 90 if t % pattern.get("every", 3) < pattern.get("busy", 1) else 0
    if kind == "ramp_to_idle":
        # Busy for `busy_for` seconds, then idle: for autostop and checklist scenarios.
        return 95 if t < pattern.get("busy_for", 10) else 0
    raise BackendError("unknown load pattern %r" % kind)


def _pids_matching(marker, scope=None, uid=None):
    """Processes whose command line carries the marker, of this user only and, when the
    daemon runs with GPUTUI_SIM_SCOPE (demo box, test box), of that scope only: a simulated
    box never adopts another user's or another box's jobs."""
    uid = os.getuid() if uid is None else uid
    out = []
    try:
        names = os.listdir(PROC)
    except OSError:  # no /proc (the demo on macOS): no process to adopt
        names = []
    for name in names:
        if name.isdigit():
            try:
                if os.stat("%s/%s" % (PROC, name)).st_uid != uid:
                    continue
                with open("%s/%s/cmdline" % (PROC, name), "rb") as f:
                    if marker.encode() not in f.read():
                        continue
            except OSError:
                continue
            if scope is not None and scope_of(name) != scope:
                continue
            out.append(int(name))
    return sorted(out)


class SimBackend:
    name = "sim"

    def __init__(self, scenario, state_dir=None, clock=time.monotonic):
        self.scenario = scenario
        self.clock = clock
        self.t0 = clock()
        gpus = scenario.get("gpus", [])
        count = scenario.get("count")
        if count and gpus:
            gpus = [dict(gpus[i % len(gpus)]) for i in range(count)]
        self.gpus = gpus
        self.state_dir = state_dir
        self.children = []  # (Popen, process spec)
        self.started = {}  # pid -> (epoch, argv) of the processes it started
        self._spawn(scenario.get("processes", []))

    @classmethod
    def from_name(cls, name, state_dir=None):
        scenario = load_scenario(name)
        scenario.setdefault("name", name)
        return cls(scenario, state_dir=state_dir)

    def _spawn(self, specs):
        if not specs:
            return
        work = os.path.join(self.state_dir or "/tmp", "sim")
        os.makedirs(work, exist_ok=True)
        for spec in specs:
            for _ in range(spec.get("copies", 1)):
                argv = spec.get("argv", ["train.py"])
                script = os.path.join(work, os.path.basename(argv[0]))
                if not os.path.exists(script):
                    with open(script, "w") as f:
                        f.write(WORKER)
                env = dict(os.environ, GPUTUI_SIM_CPU=str(spec.get("cpu", 0)))
                if spec.get("dataloader") and self.state_dir:
                    env["GPUTUI_SIM_DL"] = json.dumps(spec["dataloader"])
                    env["GPUTUI_DLHOOK_DIR"] = os.path.join(self.state_dir, "run", "dl")
                # Relative script name + cwd: the command line reads like a real job's.
                proc = subprocess.Popen([sys.executable,
                                         os.path.basename(script)] + list(argv[1:]), env=env,
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, cwd=work, close_fds=True)
                self.children.append((proc, spec))
                self.started[proc.pid] = (time.time(), ["python", os.path.basename(script)]
                                          + list(argv[1:]))

    def proc_facts(self, pid):
        """What /proc would say of a process this simulator started, for a machine without
        /proc (the demo on macOS); None for any other pid."""
        if pid not in self.started:
            return None
        start, argv = self.started[pid]
        try:
            import getpass
            user = getpass.getuser()
        except (ImportError, KeyError, OSError):
            user = None
        return {"pid": pid, "user": user, "cmd": " ".join(argv)[:300], "start": round(start, 1)}

    def inventory(self):
        if self.scenario.get("no_gpu"):
            return {"backend": self.name, "driver": None, "cuda_driver": None, "gpus": [],
                    "reason": self.scenario.get("reason", "simulated CPU-only box"),
                    "scenario": self.scenario.get("name")}
        gpus = []
        for i, g in enumerate(self.gpus):
            gpus.append({
                "index": i,
                "name": g.get("name", "NVIDIA A100-SXM4-80GB"),
                "uuid": "GPU-5e1a%04d-0000-4000-8000-%012d" % (i, i),
                "pci_bus_id": "00000000:%02X:00.0" % (0x10 + i * 0x10),
                "minor": i,
                "mem_total": g.get("mem_total", 81920),
                "power_limit": g.get("power_limit", 400),
                "clock_sm_max": g.get("clock_sm_max", 1410),
                "clock_mem_max": g.get("clock_mem_max", 1593),
                "mig_mode": g.get("mig_mode", 0),
                "virt_mode": g.get("virt_mode", "none"),
                "mig_devices": g.get("mig_devices", []),
            })
        return {"backend": self.name, "driver": self.scenario.get("driver", "550.54.15"),
                "cuda_driver": self.scenario.get("cuda_driver", "12.4"), "gpus": gpus,
                "scenario": self.scenario.get("name")}

    def topology(self):
        from remote_probe.backends import topology  # the scenario's "topology" (issue 22)
        return None if self.scenario.get("no_gpu") else topology.from_scenario(self.scenario, len(self.gpus))

    def sample(self):
        t = self.clock() - self.t0
        fail = self.scenario.get("fail_between")
        if fail and fail[0] <= t < fail[1]:
            raise BackendError("NVML error: GPU is lost (simulated)")
        if self.scenario.get("no_gpu"):
            return [], []
        procs = []
        mem_by_gpu = {}
        for proc, spec in self.children:
            if proc.poll() is not None:
                continue
            gpu = spec.get("gpu", 0)
            used = spec.get("gpu_mem", 1024)
            mem_by_gpu[gpu] = mem_by_gpu.get(gpu, 0) + used
            procs.append({"pid": proc.pid, "gpu": gpu, "kind": spec.get("kind", "C"),
                          "gpu_mem": None if spec.get("hide_mem") else used})
        for spec in self.scenario.get("adopt", []):
            # Real processes started elsewhere (by a test, from a login shell) whose command
            # line carries a marker are reported as using the GPU, like NVML would.
            for pid in _pids_matching(spec["match"], own_scope()):
                gpu = spec.get("gpu", 0)
                procs.append({"pid": pid, "gpu": gpu, "kind": "C", "gpu_mem": spec.get("gpu_mem", 1024)})
                mem_by_gpu[gpu] = mem_by_gpu.get(gpu, 0) + spec.get("gpu_mem", 1024)
        for spec in self.scenario.get("host_pids", []):
            # Processes NVML reports but this container cannot see (host pid namespace).
            procs.append({"pid": spec["pid"], "gpu": spec.get("gpu", 0), "kind": "C",
                          "gpu_mem": spec.get("gpu_mem")})
            mem_by_gpu[spec.get("gpu", 0)] = mem_by_gpu.get(spec.get("gpu", 0), 0) + spec.get("gpu_mem", 0)
        gpus = []
        for i, g in enumerate(self.gpus):
            util = utilization(g.get("load", {"kind": "idle"}), t, seed=i)
            limit = g.get("power_limit", 400)
            # "spin_marker": once that file exists the GPU hangs the NCCL way: utilization
            # pinned, power near idle (a test's job creates it when it "hangs")
            spinning = bool(g.get("spin_marker")) and os.path.exists(g["spin_marker"])
            if spinning:
                util = 99
            busy = util / 100.0
            throttle = 0x1 if util == 0 else (0x4 if g.get("power_capped") else 0)
            # "util_reported": false — MIG slices and some vGPUs: NVML gives no utilization.
            # "power_fraction" pins power (a hung NCCL job: util ~100 %, power near idle).
            reported = g.get("util_reported", True)
            gpus.append({
                "util": util if reported else None,
                "mem_util": int(util * 0.45) if reported else None,
                "mem_used": 0 if not mem_by_gpu.get(i) else mem_by_gpu[i] + 500,
                "temp": int(34 + busy * 38 + _noise(i + 7, t)),
                "power": int(limit * (g.get("spin_power_fraction", 0.2) if spinning
                                      else g.get("power_fraction", 0.15 + 0.8 * busy))),
                "clock_sm": g.get("clock_sm_max", 1410) if util else 210,
                "clock_mem": g.get("clock_mem_max", 1593),
                "pstate": 0,
                "fan": g.get("fan"),
                "throttle": throttle,
                "ecc_errors": 0,
            })
        return gpus, procs

    def close(self):
        for proc, _spec in self.children:
            if proc.poll() is None:
                proc.terminate()
        for proc, _spec in self.children:
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                proc.kill()
        self.children = []
