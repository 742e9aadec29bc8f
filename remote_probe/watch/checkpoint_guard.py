"""The checkpoint guard: the newest checkpoint-like file or directory under a job's folder,
its age, stale or not, and whether it sits on a disk the provider wipes. Pure functions;
stdlib only (Python 3.8). jobwatch re-exports them."""

import os
import re
import stat

CHECKPOINT_STALE_S = 3 * 3600.0  # no checkpoint newer than this while running: warn

CHECKPOINT_SUFFIXES = (".pt", ".pth", ".ckpt", ".safetensors", ".h5", ".keras", ".msgpack",
                       ".distcp", ".bin")
CHECKPOINT_DIR = re.compile(r"^(checkpoint[-_]\d+|ckpt[-_]?\d*|global_step\d+|step[-_]?\d+|epoch[-_=]?\d+)$", re.I)
SKIP_DIRS = frozenset((".git", "__pycache__", "node_modules", ".venv", "venv", "site-packages",
                       ".cache", "wandb", "mlruns", ".ipynb_checkpoints"))
SCAN_MAX_DEPTH = 4
SCAN_MAX_ENTRIES = 20000


def _is_checkpoint_file(name):
    lower = name.lower()
    if not lower.endswith(CHECKPOINT_SUFFIXES):
        return False
    # ".bin" is too common; only model weights count (pytorch_model.bin, adapter_model.bin).
    return not lower.endswith(".bin") or "model" in lower or "optim" in lower


def newest_checkpoint(dirs, max_depth=SCAN_MAX_DEPTH, max_entries=SCAN_MAX_ENTRIES):
    """(path, mtime) of the newest checkpoint-like file or checkpoint directory
    (checkpoint-500/, global_step1000/: their newest file's time) under `dirs`; None if
    there is none. Symlinks are not followed; the scan stops after max_entries."""
    best = None
    budget = [max_entries]

    def consider(path, mtime):
        nonlocal best
        if best is None or mtime > best[1]:
            best = (path, mtime)

    def newest_inside(path):
        newest = None
        try:
            with os.scandir(path) as it:
                for entry in it:
                    budget[0] -= 1
                    if budget[0] < 0:
                        break
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISREG(st.st_mode) and (newest is None or st.st_mtime > newest):
                        newest = st.st_mtime
        except OSError:
            pass
        return newest

    def walk(path, depth):
        if depth > max_depth or budget[0] < 0:
            return
        try:
            with os.scandir(path) as it:
                entries = list(it)
        except OSError:
            return
        for entry in entries:
            budget[0] -= 1
            if budget[0] < 0:
                return
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                if CHECKPOINT_DIR.match(entry.name):
                    newest = newest_inside(entry.path)
                    if newest is not None:
                        consider(entry.path + "/", newest)
                elif entry.name not in SKIP_DIRS and not entry.name.startswith("."):
                    walk(entry.path, depth + 1)
            elif stat.S_ISREG(st.st_mode) and _is_checkpoint_file(entry.name):
                consider(entry.path, st.st_mtime)

    seen = set()
    for d in dirs:
        real = os.path.realpath(d)
        if real in seen:
            continue
        seen.add(real)
        walk(d, 0)
    return best


def checkpoint_status(newest, now, started_t=None, stale_after=CHECKPOINT_STALE_S,
                      wiped_prefixes=()):
    """The guard's verdict for a running job: dict with state "fresh" / "stale" /
    "none_yet" / "none", the newest path and its age, and on_wiped_disk when it lies
    under a path the provider wipes at release.
    "stale": the newest checkpoint is older than stale_after. "none": the job has run
    longer than stale_after and wrote none. "none_yet": it has not run that long."""
    ran = None if started_t is None else now - started_t
    if newest is None:
        state = "none" if ran is not None and ran >= stale_after else "none_yet"
        return {"state": state, "path": None, "age_seconds": None, "on_wiped_disk": False}
    path, mtime = newest
    age = max(0.0, now - mtime)
    state = "stale" if age > stale_after and (ran is None or ran > stale_after) else "fresh"
    wiped = any(path == p or path.startswith(p.rstrip("/") + "/") for p in wiped_prefixes)
    return {"state": state, "path": path, "age_seconds": age, "on_wiped_disk": wiped}
