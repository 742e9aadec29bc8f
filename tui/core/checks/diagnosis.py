"""Is the GPU starved by data loading? One plain function, table-tested.

Facts in (hook stats, the workers seen from outside, the box's CPU and disk, the GPU's
utilization history), one verdict and one line out. Starvation is only claimed when the
loop waits a lot *and* the GPU's utilization dips: a loop can wait on an async CUDA
queue while the GPU stays busy, which is not starvation.
"""

import dataclasses
import math
from typing import List, Optional, Protocol, Sequence, TypeVar

from rich.cells import cell_len

from tui.core.text.boxtext import visible
from tui.core.i18n import _



class _Usage(Protocol):
    """What orphaned_workers reads of a worker (tui.core.model.Worker has it; the model
    imports Diagnosis from here, so this module names no model class)."""
    cpu: Optional[float]
    rss: Optional[float]


_W = TypeVar("_W", bound=_Usage)

WAIT_HIGH = 0.20  # share of step time spent waiting for the next batch
WAIT_LOW = 0.10
GPU_BUSY = 85.0  # mean utilization above which the GPU is not starved
WORKER_BUSY = 85.0  # % of a core: a worker at its limit
DISK_BUSY = 85.0
IO_WAIT_STATE = "D"


@dataclasses.dataclass
class LoaderFacts:
    wait_fraction: Optional[float]
    num_workers: Optional[int]
    gpu_util: Sequence[float] = ()  # recent utilization of the process's GPU
    worker_cpu: Sequence[Optional[float]] = ()
    worker_states: Sequence[str] = ()
    ncpu: Optional[float] = None  # cores this box (or cgroup) may use
    box_cpu: Optional[float] = None  # % of all cores busy
    disk_busy: Optional[float] = None
    io_pressure: Optional[float] = None  # PSI some avg10, %
    pin_memory: Optional[bool] = None


@dataclasses.dataclass
class Diagnosis:
    verdict: str  # "starved", "waiting", "ok", "unknown"
    cause: Optional[str]  # "no_workers", "io", "cpu_saturated", "workers_busy", "slow_loader",
    # "workers_unknown"
    line: str


def _gpu_dips(util: Sequence[Optional[float]]) -> Optional[bool]:
    known = [u for u in util if u is not None]
    if len(known) < 3:
        return None
    mean = sum(known) / len(known)
    dips = sum(1 for u in known if u < 50) / len(known)
    return mean < GPU_BUSY or dips >= 0.2


def diagnose(f: LoaderFacts) -> Diagnosis:
    if f.wait_fraction is None:
        return Diagnosis("unknown", None, _("no dataloader stats: start the job from gputui's tmux "
                                            "panel, or export the hook (see README)"))
    pct = round(f.wait_fraction * 100)
    if f.wait_fraction < WAIT_LOW:
        return Diagnosis("ok", None, _("not data-bound: %d%% of step time waiting for batches") % pct)
    dips = _gpu_dips(f.gpu_util)
    if f.wait_fraction < WAIT_HIGH or dips is False:
        return Diagnosis("ok", None, _("not data-bound: %d%% of step time waiting, but the GPU stays "
                                       "busy") % pct if dips is False else
                         _("mostly fine: %d%% of step time waiting for batches") % pct)
    head = _("GPU starved by data loading: %d%% of step time waiting for batches") % pct
    if dips is None:
        head = _("%d%% of step time waiting for batches (GPU history too short to confirm)") % pct
    verdict = "starved" if dips else "waiting"
    ncpu = f.ncpu or 0
    idle_cores = ncpu * (1 - (f.box_cpu or 0) / 100.0) if ncpu else None
    workers = f.num_workers or 0
    if workers == 0:
        suggestion = max(2, min(8, int(ncpu) - 1)) if ncpu else 4
        return Diagnosis(verdict, "no_workers", _("%s; num_workers=0 loads every batch in the "
                         "training process → set num_workers=%d%s") % (
                             head, suggestion, "" if f.pin_memory else _(" and pin_memory=True")))
    in_io = sum(1 for s in f.worker_states if s == IO_WAIT_STATE)
    if (f.worker_states and in_io * 2 >= len(f.worker_states)) or (f.disk_busy or 0) >= DISK_BUSY \
            or (f.io_pressure or 0) >= 30:
        detail = []
        if in_io:
            detail.append(_("%d of %d workers in I/O wait") % (in_io, len(f.worker_states)))
        if f.disk_busy is not None:
            detail.append(_("disk busy %d%%") % round(f.disk_busy))
        return Diagnosis(verdict, "io", _("%s; %s → copy the dataset to local disk / pack small "
                         "files (tar shards, LMDB)") % (head, ", ".join(detail) or _("I/O pressure high")))
    if f.box_cpu is not None and (f.box_cpu >= 90 or (idle_cores is not None and idle_cores < 1)):
        return Diagnosis(verdict, "cpu_saturated", _("%s; box CPU saturated (%d%%) → lighter "
                           "transforms, fewer workers, or a box with more cores per GPU")
                         % (head, round(f.box_cpu)))
    busy = [c for c in f.worker_cpu if c is not None and c >= WORKER_BUSY]
    if f.worker_cpu and len(busy) == len(f.worker_cpu):
        spare = int(math.floor(idle_cores)) if idle_cores is not None else workers
        target = workers + max(1, spare)
        return Diagnosis(verdict, "workers_busy", _("%s; %d workers each at ~100%% CPU; %s → raise "
                           "num_workers (try %d)") % (
                             head, workers, _("%d cores idle") % spare if idle_cores is not None
                             else _("cores to spare unknown"), target))
    if not any(c is not None for c in f.worker_cpu):
        # no worker's CPU was read (workers in another PID namespace, or gone): "not at their
        # limit" would be a guess; on the H200, 12 CPU-bound workers at their limit read so
        return Diagnosis(verdict, "workers_unknown", _("%s; the workers' CPU could not be read → "
                         "if each is at ~100%% CPU raise num_workers, else check the dataset's "
                         "__getitem__ for slow calls") % head)
    return Diagnosis(verdict, "slow_loader", _("%s; workers not at their limit → raise "
                       "prefetch_factor, check the dataset's __getitem__ for slow calls") % head)


FIX_ARROW = " → "


def fit_diagnosis(line: str, width: int) -> str:
    """The diagnosis in `width` columns with its fix whole: the cause is shortened, never the
    "→ set num_workers=8" a cut from the end used to hide ("… → set"). A fix wider than the
    room is returned whole after the arrow (the panel wraps it)."""
    if cell_len(line) <= width:
        return line
    head, sep, fix = line.rpartition(FIX_ARROW)
    if not sep:
        return visible(line, limit=width)
    room = width - cell_len(FIX_ARROW + fix)
    if room >= 12:
        return visible(head, limit=room) + FIX_ARROW + fix
    return FIX_ARROW.lstrip() + fix


def orphaned_workers(orphans: Sequence[_W]) -> List[_W]:
    """Leftover pt_data_worker processes whose trainer is gone but that hold CPU or memory."""
    return [o for o in orphans if (o.cpu or 0) >= 1 or (o.rss or 0) >= 100]
