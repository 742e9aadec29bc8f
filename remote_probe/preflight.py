"""Facts about a freshly rented box for gputui's preflight (`gputui doctor`).

Every step has a timeout: a hung driver or a dead network cannot hang the probe.
The training environment's python runs a small script that reports its torch build
and times a matmul on each GPU.
"""

import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

from . import procfs

TORCH_TIMEOUT = 120.0
NET_TIMEOUT = 4.0
DEFAULT_URLS = ("https://pypi.org/simple/pip/", "https://huggingface.co/api/models?limit=1")

TORCH_SCRIPT = r'''
import json, os, sys, time
out = {"python": sys.version.split()[0], "executable": sys.executable,
       "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}
try:
    import torch
except Exception as exc:
    out["torch"] = None
    out["torch_error"] = "%s: %s" % (type(exc).__name__, exc)
    print(json.dumps(out)); sys.exit(0)
out["torch"] = torch.__version__
out["torch_cuda"] = getattr(torch.version, "cuda", None)
try:
    out["cuda_available"] = torch.cuda.is_available()
    out["device_count"] = torch.cuda.device_count() if out["cuda_available"] else 0
except Exception as exc:
    out["cuda_available"] = False
    out["cuda_error"] = "%s: %s" % (type(exc).__name__, exc)
    out["device_count"] = 0
smoke = []
if SMOKE and out.get("cuda_available"):
    for i in range(out["device_count"]):
        try:
            dev = torch.device("cuda", i)
            name = torch.cuda.get_device_name(i)
            dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
            n = 8192 if torch.cuda.get_device_properties(i).total_memory > 30e9 else 4096
            a = torch.randn(n, n, device=dev, dtype=dtype)
            b = torch.randn(n, n, device=dev, dtype=dtype)
            for _ in range(3):
                a @ b
            torch.cuda.synchronize(dev)
            reps = 10
            t = time.perf_counter()
            for _ in range(reps):
                a @ b
            torch.cuda.synchronize(dev)
            dt = time.perf_counter() - t
            smoke.append({"index": i, "name": name, "dtype": str(dtype).split(".")[-1], "n": n,
                          "tflops": round(2 * n ** 3 * reps / dt / 1e12, 1)})
            del a, b
            torch.cuda.empty_cache()
        except Exception as exc:
            smoke.append({"index": i, "error": "%s: %s" % (type(exc).__name__, exc)})
out["smoke"] = smoke
print(json.dumps(out))
'''


def conda_pythons():
    """Conda environments on the box: candidates for "the training environment"."""
    home = os.path.expanduser("~")
    found = []
    for base in (home + "/miniconda3", home + "/anaconda3", home + "/miniforge3", "/opt/conda",
                 "/root/miniconda3"):
        for py in [base + "/bin/python"] + sorted(glob.glob(base + "/envs/*/bin/python")):
            if os.access(py, os.X_OK) and py not in found:
                found.append(py)
    return found


def torch_facts(python=None, smoke=True, timeout=TORCH_TIMEOUT):
    python = python or shutil.which("python3") or sys.executable
    script = "SMOKE = %r\n%s" % (bool(smoke), TORCH_SCRIPT)
    try:
        out = subprocess.run([python, "-c", script], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"python_path": python, "error": "the training python did not finish within %d s "
                                                "(hung GPU driver?)" % timeout}
    except OSError as exc:
        return {"python_path": python, "error": "cannot run %s: %s" % (python, exc.strerror)}
    lines = out.stdout.decode("utf-8", "replace").strip().splitlines()
    try:
        facts = json.loads(lines[-1])
    except (IndexError, ValueError):
        err = out.stderr.decode("utf-8", "replace").strip().splitlines()
        return {"python_path": python, "error": "the training python failed: %s"
                % (err[-1] if err else "exit %d" % out.returncode)}
    facts["python_path"] = python
    return facts


def reachable(url, timeout=NET_TIMEOUT):
    t0 = time.time()
    try:
        req = urllib.request.Request(url, method="HEAD", headers={"User-Agent": "gputui-probe"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return {"url": url, "ok": True, "status": r.status, "ms": round((time.time() - t0) * 1000)}
    except urllib.error.HTTPError as exc:  # the server answered: reachable
        return {"url": url, "ok": True, "status": exc.code, "ms": round((time.time() - t0) * 1000)}
    except (urllib.error.URLError, socket.timeout, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return {"url": url, "ok": False, "error": str(reason)}


def collect(python=None, smoke=True, urls=DEFAULT_URLS):
    mem = procfs.parse_meminfo(procfs.read_text("/proc/meminfo"))
    disks = procfs.disk_usage(procfs.parse_mounts(procfs.read_text("/proc/mounts")))
    return {
        "torch": torch_facts(python, smoke),
        "conda_pythons": conda_pythons(),
        "ncpu": os.cpu_count(), "cpu_limit": procfs.cgroup_cpu_limit(),
        "mem_total": mem["mem_total"], "disks": disks,
        "net": [reachable(u) for u in (urls or ())],
        "tmux": shutil.which("tmux") is not None,
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }
