"""gputui's DataLoader hook: how long the training loop waits for each batch.

Loaded by the sitecustomize next to it when this directory is on PYTHONPATH (jobs that
gputui starts get that automatically; by hand: one `export`, see the README). It never
imports torch and never touches CUDA: it waits until the program imports
``torch.utils.data.dataloader`` itself, then wraps ``_BaseDataLoaderIter.__next__``.
Every private torch attribute is read with a default, and any error in the hook's own
bookkeeping is swallowed: the worst case is missing stats, never a broken run.

Stats go once a second to ``$GPUTUI_DLHOOK_DIR/dl-<pid>.json`` (atomic rename), which
the probe daemon merges by pid.

Explicit use, without the import hook:  ``from gputui_dlhook import watch; watch(loader)``.
"""

import collections
import json
import os
import sys
import threading
import time

TARGET = "torch.utils.data.dataloader"
WINDOW = 10.0  # seconds of history the rates and fractions are computed over
_perf = time.perf_counter


def enabled():
    return os.environ.get("GPUTUI_DLHOOK", "1") != "0"


def stats_dir():
    return os.environ.get("GPUTUI_DLHOOK_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "gputui", "run", "dl")


class Stats:
    """Counters the __next__ wrapper bumps; a thread turns them into a file."""

    def __init__(self):
        self.batches = 0
        self.samples = 0
        self.wait = 0.0  # seconds blocked inside __next__
        self.waits = collections.deque(maxlen=512)
        self.batch_size = None
        self.loader = {}
        self.first = None
        self.entered = None  # perf_counter when the loop started waiting, while it waits
        self.history = collections.deque()  # (t, batches, samples, wait)
        self.thread = None


STATS = Stats()


def _batch_len(batch):
    """Samples in a batch, from the first tensor-like thing found; None if unknown."""
    try:
        for _ in range(4):
            shape = getattr(batch, "shape", None)
            if shape is not None and len(shape):
                return int(shape[0])
            if isinstance(batch, dict):
                batch = next(iter(batch.values()))
            elif isinstance(batch, (list, tuple)) and batch:
                batch = batch[0]
            else:
                return None
    except Exception:  # noqa: BLE001 - unknown batch types: just no sample count
        return None
    return None


def _describe(it):
    g = getattr
    workers = g(it, "_workers", None) or []
    return {
        "num_workers": g(it, "_num_workers", None),
        "pin_memory": g(it, "_pin_memory", None),
        "prefetch_factor": g(it, "_prefetch_factor", None),
        "persistent_workers": g(it, "_persistent_workers", None),
        "worker_pids": [p for p in (g(w, "pid", None) for w in workers) if p],
    }


def _wrap_next(original):
    def __next__(self):
        t0 = _perf()
        STATS.entered = t0
        try:
            batch = original(self)
        finally:
            STATS.entered = None
        t1 = _perf()
        try:
            s = STATS
            dt = t1 - t0
            s.wait += dt
            s.waits.append(dt)
            s.batches += 1
            if s.batch_size is None:
                s.first = t0
                s.batch_size = _batch_len(batch) or 0
                s.loader = _describe(self)
                _start_writer()
            elif s.batches % 512 == 0:
                s.loader = _describe(self)  # workers can be re-spawned between epochs
            s.samples += s.batch_size
        except Exception:  # noqa: BLE001 - never break the training loop
            pass
        return batch
    __next__._gputui_wrapped = True
    return __next__


def patch(module):
    """Wrap the iterator's __next__ in an imported torch.utils.data.dataloader module."""
    cls = getattr(module, "_BaseDataLoaderIter", None)
    original = getattr(cls, "__next__", None) if cls is not None else None
    if original is None or getattr(original, "_gputui_wrapped", False):
        return False
    cls.__next__ = _wrap_next(original)
    return True


def watch(loader=None):
    """Explicit opt-in for code run without the import hook. Returns the loader."""
    module = sys.modules.get(TARGET)
    if module is not None:
        patch(module)
    return loader


def snapshot(now=None):
    """The stats file's content: rates and wait fraction over the last WINDOW seconds."""
    s = STATS
    now = _perf() if now is None else now
    s.history.append((now, s.batches, s.samples, s.wait))
    while len(s.history) > 2 and now - s.history[0][0] > WINDOW:
        s.history.popleft()
    t0, b0, n0, w0 = s.history[0]
    # a loop stuck waiting right now (a 30 s stall) shows as waiting, not as idle
    entered = s.entered
    ongoing = (now - max(entered, t0)) if entered is not None else 0.0
    span = now - t0 if now > t0 else 0.0
    if span <= 0 and s.first is not None:
        t0, b0, n0, w0, span = s.first, 0, 0, 0.0, now - s.first
    waits = sorted(s.waits)

    def pct(p):
        return round(waits[min(len(waits) - 1, int(p * len(waits)))] * 1000, 2) if waits else None
    out = {
        "pid": os.getpid(), "t": time.time(), "batches": s.batches, "samples": s.samples,
        "batches_per_s": round((s.batches - b0) / span, 2) if span > 0 else None,
        "samples_per_s": round((s.samples - n0) / span, 1) if span > 0 else None,
        "wait_fraction": round(min(1.0, (s.wait - w0 + ongoing) / span), 3) if span > 0 else None,
        "waiting_now_s": round(now - entered, 2) if entered is not None else 0.0,
        "wait_p50_ms": pct(0.5), "wait_p95_ms": pct(0.95),
        "wait_max_ms": round(waits[-1] * 1000, 2) if waits else None,
    }
    out.update(s.loader)
    return out


def _private_dirs(directory):
    """mkdir -p where every directory made is 0700 (makedirs gives the parents 0755: a
    `rm -rf run/` came back world-readable)."""
    missing, head = [], directory
    while head and not os.path.isdir(head):
        missing.append(head)
        head = os.path.dirname(head)
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            pass


def write_stats(directory=None):
    directory = directory or stats_dir()
    _private_dirs(directory)
    path = os.path.join(directory, "dl-%d.json" % os.getpid())
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(snapshot(), f)
    os.replace(tmp, path)


def _writer():
    while True:
        time.sleep(1.0)
        try:
            write_stats()
        except Exception:  # noqa: BLE001 - a full disk must not stop training
            pass


def _start_writer():
    if STATS.thread is None:
        STATS.thread = threading.Thread(target=_writer, name="gputui-dlhook", daemon=True)
        STATS.thread.start()


class _Finder:
    """A meta-path finder that patches the dataloader module right after torch loads it."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != TARGET:
            return None
        import importlib.machinery
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        original = loader.exec_module

        def exec_module(module):
            original(module)
            try:
                patch(module)
            except Exception:  # noqa: BLE001 - an unknown torch: no stats, no harm
                pass
        loader.exec_module = exec_module
        return spec


def install():
    """Called from sitecustomize: arm the import hook (or patch, if torch is already in)."""
    if not enabled():
        return False
    if TARGET in sys.modules:
        return patch(sys.modules[TARGET])
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
    return True
