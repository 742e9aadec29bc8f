"""Facts about a freshly rented box for gputui's preflight (`gputui doctor`).

Every step has a timeout: a hung driver or a dead network cannot hang the probe.
The training environment's python runs a small script that reports its torch build
and times a matmul on each GPU.
"""

import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

from remote_probe import procfs

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
# The interconnect (issue 22): only when every GPU is idle (nearly all its memory free), a short
# host-to-device copy per GPU, a device-to-device copy per pair and, with >= 2 GPUs, an all-reduce.
link = {}
if SMOKE and out.get("cuda_available") and out["device_count"] >= 1:
    try:
        n = out["device_count"]
        idle = all(torch.cuda.mem_get_info(i)[0] > 0.9 * torch.cuda.mem_get_info(i)[1] for i in range(n))
        link["idle"] = idle
        if idle:
            size = 256 << 20
            def timed(fn, reps=5):
                fn()
                for d in range(n):
                    torch.cuda.synchronize(d)
                t = time.perf_counter()
                for _ in range(reps):
                    fn()
                for d in range(n):
                    torch.cuda.synchronize(d)
                return (time.perf_counter() - t) / reps
            host = torch.empty(size, dtype=torch.uint8).pin_memory()
            h2d = []
            for i in range(n):
                dev = torch.empty(size, dtype=torch.uint8, device=i)
                h2d.append({"gpu": i, "gbps": round(size / timed(lambda: dev.copy_(host, non_blocking=True)) / 1e9, 1)})
                del dev
            link["h2d"] = h2d
            d2d = []
            for a in range(min(n, 8)):
                for b in range(a + 1, min(n, 8)):
                    src = torch.empty(size, dtype=torch.uint8, device=a)
                    dst = torch.empty(size, dtype=torch.uint8, device=b)
                    d2d.append({"a": a, "b": b, "gbps": round(size / timed(lambda: dst.copy_(src, non_blocking=True)) / 1e9, 1)})
                    del src, dst
            link["d2d"] = d2d
            if n >= 2:
                import torch.cuda.nccl as nccl
                elems = (64 << 20) // 4
                bufs = [torch.ones(elems, dtype=torch.float32, device=i) for i in range(n)]
                dt = timed(lambda: nccl.all_reduce(bufs), reps=5)
                # nccl-tests' bus bandwidth: bytes * 2 (n-1) / n / time
                link["allreduce"] = {"gpus": n, "bytes": elems * 4,
                                     "busbw_gbps": round(elems * 4 * 2 * (n - 1) / n / dt / 1e9, 1)}
                del bufs
            torch.cuda.empty_cache()
    except Exception as exc:
        link["error"] = "%s: %s" % (type(exc).__name__, exc)
out["link"] = link
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


def topology_of(backend):
    """The backend's interconnect facts, or None when it has none (nvidia-smi, no GPU)."""
    fn = getattr(backend, "topology", None)
    if fn is None:
        return None
    try:
        return fn()
    except Exception as exc:  # a broken driver must not break doctor: reported as a fact
        return {"error": "%s: %s" % (type(exc).__name__, exc)}


# Where work lives on rented boxes: each is reported with the filesystem holding it.
DATA_DIRS = ("/root/autodl-tmp", "/root/autodl-fs", "/root/gpuhub-tmp", "/workspace", "/lambda/nfs",
             "/data", "/mnt", "/dev/shm", "/tmp")


def _unescape(path):
    """/proc/mounts writes space, tab, newline and backslash as octal escapes."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), path)


def mount_of(path, mounts):
    """The mount point (and fstype) holding `path`: the longest mount prefix of its real path."""
    real = os.path.realpath(path)
    best = None
    for mnt, fstype, dev in mounts:
        if real == mnt or real.startswith(mnt.rstrip("/") + "/") or mnt == "/":
            if best is None or len(mnt) > len(best[0]):
                best = (mnt, fstype, dev)
    return best


def path_filesystems(paths, mounts_text):
    """For home, cwd and the data dirs: the filesystem each is on, tmpfs included, with its space."""
    mounts = []
    for line in mounts_text.splitlines():
        parts = line.split()
        if len(parts) >= 3:
            mounts.append((_unescape(parts[1]), parts[2], parts[0]))
    out, seen = [], set()
    for role, path in paths:
        if not path or not os.path.exists(path):
            continue
        m = mount_of(path, mounts)
        if m is None:
            continue
        try:
            st = os.statvfs(path)
        except OSError:
            continue
        entry = {"role": role, "path": path, "mount": m[0], "fstype": m[1],
                 "total": st.f_blocks * st.f_frsize // 1048576, "free": st.f_bavail * st.f_frsize // 1048576}
        key = (role, m[0])
        if key not in seen:
            seen.add(key)
            out.append(entry)
    return out


def collect(python=None, smoke=True, urls=DEFAULT_URLS, data_dirs=()):
    mem = procfs.parse_meminfo(procfs.read_text(procfs.PROC + "/meminfo"))
    disks = procfs.disk_usage(procfs.parse_mounts(procfs.read_text(procfs.PROC + "/mounts")))
    return {
        "torch": torch_facts(python, smoke),
        "conda_pythons": conda_pythons(),
        "ncpu": os.cpu_count(), "cpu_limit": procfs.cgroup_cpu_limit(),
        "mem_total": mem["mem_total"], "disks": disks,
        "net": [reachable(u) for u in (urls or ())],
        "tmux": shutil.which("tmux") is not None,
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "filesystems": path_filesystems(
            [("home", os.path.expanduser("~")), ("cwd", os.getcwd())]
            + [("data", p) for p in tuple(data_dirs) + DATA_DIRS], procfs.read_text(procfs.PROC + "/mounts")),
        "network_files": [p for p in ("/etc/network_turbo",) if os.path.isfile(p)],
        "pip_index": os.environ.get("PIP_INDEX_URL") or _pip_config_index(),
    }


def _pip_config_index():
    """The index-url of pip's config files, if one is set (a mirror already configured)."""
    for path in (os.path.expanduser("~/.pip/pip.conf"), os.path.expanduser("~/.config/pip/pip.conf"),
                 "/etc/pip.conf"):
        try:
            with open(path, "r", encoding="utf-8", errors="replace") as f:
                for line in f:
                    key, sep, value = line.partition("=")
                    if sep and key.strip() == "index-url":
                        return value.strip()[:200]
        except OSError:
            continue
    return None
