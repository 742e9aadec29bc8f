"""The one place on the laptop that reads the wire: probe messages -> tui.core.model objects.

Columnar rows are read by their column names from the protocol, here and nowhere else in
`tui/`; a change of the wire format is one edit in this module. Messages arrive cleaned by
the protocol's schemas (types and ranges held); values of fields the schema leaves open
(the dataloader hook's figures, MIG slices) are checked here: a value of the wrong type is
"not available", and text from the box stays text (rendering shows it escaped).
"""

import math
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from remote_probe import wire
from tui.core.model import (
    Clock,
    Disk,
    GpuFacts,
    GpuLive,
    Host,
    HostFacts,
    JobCheckpoint,
    JobProgress,
    Jobs,
    JobState,
    JobWatch,
    Loaders,
    LoaderStats,
    MigSlice,
    NotifyEvent,
    ProcMeta,
    ProcUsage,
    Sample,
    Trainer,
    UnprotectedJob,
    Worker,
)


# Column positions, by the wire's own names.
GPU_UTIL = wire.GpuCol.UTIL
GPU_MEM_UTIL = wire.GpuCol.MEM_UTIL
GPU_MEM_USED = wire.GpuCol.MEM_USED
GPU_TEMP = wire.GpuCol.TEMP
GPU_POWER = wire.GpuCol.POWER
GPU_CLOCK_SM = wire.GpuCol.CLOCK_SM
GPU_CLOCK_MEM = wire.GpuCol.CLOCK_MEM
GPU_PSTATE = wire.GpuCol.PSTATE
GPU_FAN = wire.GpuCol.FAN
GPU_THROTTLE = wire.GpuCol.THROTTLE
GPU_ECC = wire.GpuCol.ECC_ERRORS
PROC_PID = wire.ProcCol.PID
PROC_GPU = wire.ProcCol.GPU
PROC_GPU_MEM = wire.ProcCol.GPU_MEM
PROC_CPU = wire.ProcCol.CPU
PROC_RSS = wire.ProcCol.RSS
PROC_FLAGS = wire.ProcCol.FLAGS
PROC_PPID = wire.ProcCol.PPID


# -- values of open fields ----------------------------------------------------------------
def _num(value: Any) -> Optional[float]:
    """A finite number as it came (int stays int), else None."""
    kind = type(value)  # the usual cases first: a sample has ~600 numbers a second
    if kind is int:
        return value
    if kind is float:
        return value if value - value == 0.0 else None  # inf - inf and NaN are NaN
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _int(value: Any) -> Optional[int]:
    if type(value) is int:
        return value
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _bool(value: Any) -> Optional[bool]:
    return value if isinstance(value, bool) else None


def _text(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None


def _label(value: Any) -> Optional[str]:
    """A name that may come as a number (an unknown NVML mode): shown as text."""
    if isinstance(value, str):
        return value
    return None if _num(value) is None else str(value)


def _dicts(value: Any) -> List[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _cell(row: Sequence[Any], i: int) -> Any:
    return row[i] if i < len(row) else None


# -- rows ---------------------------------------------------------------------------------
def gpu_live(row: Sequence[Any]) -> GpuLive:
    """One GPU row of a sample."""
    throttle = _int(_cell(row, GPU_THROTTLE))
    return GpuLive(
        util=_num(_cell(row, GPU_UTIL)), mem_util=_num(_cell(row, GPU_MEM_UTIL)),
        mem_used=_num(_cell(row, GPU_MEM_USED)), temp=_num(_cell(row, GPU_TEMP)),
        power=_num(_cell(row, GPU_POWER)), clock_sm=_num(_cell(row, GPU_CLOCK_SM)),
        clock_mem=_num(_cell(row, GPU_CLOCK_MEM)), pstate=_int(_cell(row, GPU_PSTATE)),
        fan=_num(_cell(row, GPU_FAN)), throttle=throttle, ecc_errors=_int(_cell(row, GPU_ECC)),
        throttle_reasons=tuple(wire.throttle_names(throttle)))


def proc_usage(row: Sequence[Any]) -> Optional[ProcUsage]:
    """One process row of a sample; None for a row without a pid."""
    pid = _int(_cell(row, PROC_PID))
    if pid is None:
        return None
    flags = _int(_cell(row, PROC_FLAGS)) or 0
    kind = "G" if flags & wire.PROC_GRAPHICS else ("?" if flags & wire.PROC_FD_ONLY else "C")
    return ProcUsage(pid=pid, gpu=_int(_cell(row, PROC_GPU)), gpu_mem=_num(_cell(row, PROC_GPU_MEM)),
                     cpu=_num(_cell(row, PROC_CPU)), rss=_num(_cell(row, PROC_RSS)),
                     local=not flags & wire.PROC_HOST_PID, kind=kind,
                     ppid=_int(_cell(row, PROC_PPID)))  # an older probe's row has none


_USAGES: Dict[tuple, Optional[ProcUsage]] = {}  # row (values and their types) -> proc_usage(row)


def proc_usages(rows: Iterable[Sequence[Any]]) -> Tuple[ProcUsage, ...]:
    """The process rows of a sample. A row the same as one read before (values and their
    types: 1 and 1.0 and True are three rows) gives the ProcUsage read then: most of the 64
    rows of a sample repeat from the last one, and building them again was a third of
    reading a sample."""
    cache = _USAGES
    out = []
    for r in rows:
        if not isinstance(r, (list, tuple)):
            continue
        try:
            key = (tuple(r), tuple(map(type, r)))
            p = cache[key]
        except KeyError:
            p = proc_usage(r)
            if len(cache) >= 4096:  # rows of processes long gone
                cache.clear()
            cache[key] = p
        except TypeError:  # a value that cannot be a key (not from a cleaned message)
            p = proc_usage(r)
        if p is not None:
            out.append(p)
    return tuple(out)


def proc_flags(p: ProcUsage) -> int:
    """The wire's flag bits of a process (the status document reports them as sent)."""
    flags = 0 if p.local else wire.PROC_HOST_PID
    return flags | (wire.PROC_GRAPHICS if p.kind == "G" else
                    wire.PROC_FD_ONLY if p.kind == "?" else 0)


def proc_meta(d: Mapping[str, Any]) -> Optional[ProcMeta]:
    pid = _int(d.get("pid"))
    if pid is None:
        return None
    return ProcMeta(pid=pid, user=_text(d.get("user")), cmd=_text(d.get("cmd")),
                    start=_num(d.get("start")), host_pid=_int(d.get("host_pid")))


def proc_metas(rows: Any) -> Tuple[ProcMeta, ...]:
    out = (proc_meta(d) for d in _dicts(rows))
    return tuple(m for m in out if m is not None)


def gpu_facts(d: Mapping[str, Any], position: int) -> GpuFacts:
    """One inventory GPU; `position` stands in for a missing index."""
    index = _int(d.get("index"))
    return GpuFacts(
        index=position if index is None else index, name=_text(d.get("name")),
        uuid=_text(d.get("uuid")), pci_bus_id=_text(d.get("pci_bus_id")), minor=_int(d.get("minor")),
        mem_total=_num(d.get("mem_total")), power_limit=_num(d.get("power_limit")),
        clock_sm_max=_num(d.get("clock_sm_max")), clock_mem_max=_num(d.get("clock_mem_max")),
        mig_mode=_int(d.get("mig_mode")), virt_mode=_label(d.get("virt_mode")),
        mig_devices=tuple(MigSlice(name=_label(m.get("name")), mem_total=_num(m.get("mem_total")))
                          for m in _dicts(d.get("mig_devices"))))


def inventory_gpus(inventory: Mapping[str, Any]) -> Tuple[GpuFacts, ...]:
    return tuple(gpu_facts(d, i) for i, d in enumerate(_dicts(inventory.get("gpus"))))


def host_facts(inventory: Mapping[str, Any]) -> HostFacts:
    d = inventory.get("host")
    d = d if isinstance(d, dict) else {}
    return HostFacts(ncpu=_int(d.get("ncpu")), cpu_limit=_num(d.get("cpu_limit")),
                     hostname=_text(d.get("hostname")), boot_time=_num(d.get("boot_time")),
                     instance_start=_num(d.get("instance_start")))


def disk(d: Mapping[str, Any]) -> Disk:
    return Disk(mount=_text(d.get("mount")), fstype=_text(d.get("fstype")), total=_num(d.get("total")),
                used=_num(d.get("used")), free=_num(d.get("free")))


def disks(rows: Any) -> Tuple[Disk, ...]:
    return tuple(disk(d) for d in _dicts(rows))


def _nums(value: Any) -> Tuple[Optional[float], ...]:
    return tuple(_num(v) for v in value) if isinstance(value, list) else ()


def host(d: Any) -> Optional[Host]:
    """A sample's host block; None when the sample had none (or an empty one)."""
    if not isinstance(d, dict) or not d:
        return None
    return Host(cpu=_num(d.get("cpu")), cores=_nums(d.get("cores")), iowait=_num(d.get("iowait")),
                load=_nums(d.get("load")), mem_total=_num(d.get("mem_total")),
                mem_used=_num(d.get("mem_used")), swap_total=_num(d.get("swap_total")),
                swap_used=_num(d.get("swap_used")), disks=disks(d.get("disks")),
                rx_bps=_num(d.get("rx_bps")), tx_bps=_num(d.get("tx_bps")))


def loader_stats(d: Mapping[str, Any]) -> Optional[LoaderStats]:
    pid = _int(d.get("pid"))
    if pid is None:
        return None
    return LoaderStats(
        pid=pid, batches_per_s=_num(d.get("batches_per_s")), samples_per_s=_num(d.get("samples_per_s")),
        wait_fraction=_num(d.get("wait_fraction")), wait_p50_ms=_num(d.get("wait_p50_ms")),
        wait_p95_ms=_num(d.get("wait_p95_ms")), wait_max_ms=_num(d.get("wait_max_ms")),
        num_workers=_int(d.get("num_workers")), pin_memory=_bool(d.get("pin_memory")),
        prefetch_factor=_int(d.get("prefetch_factor")), persistent_workers=_bool(d.get("persistent_workers")))


def worker(d: Mapping[str, Any]) -> Optional[Worker]:
    pid = _int(d.get("pid"))
    if pid is None:
        return None
    return Worker(pid=pid, cpu=_num(d.get("cpu")), rss=_num(d.get("rss")), state=_text(d.get("state")))


def workers(rows: Any) -> Tuple[Worker, ...]:
    out = (worker(d) for d in _dicts(rows))
    return tuple(w for w in out if w is not None)


def jobs(d: Any) -> Jobs:
    """The jobs block: dataloader workers seen from outside, unprotected jobs, tmux's error.
    (tmux sessions stay the cleaned dicts the tmux screen and tui.core.jobs.tmux_rows read.)"""
    d = d if isinstance(d, dict) else {}
    ld = d.get("loaders") if isinstance(d.get("loaders"), dict) else {}
    trainers = tuple(Trainer(pid=t["pid"], workers=workers(t.get("workers")))
                     for t in _dicts(ld.get("trainers")) if _int(t.get("pid")) is not None)
    disk_d, psi = ld.get("disk"), ld.get("psi")
    loaders = Loaders(trainers=trainers, orphans=workers(ld.get("orphans")),
                      disk_busy=_num(disk_d.get("busy")) if isinstance(disk_d, dict) else None,
                      io_pressure=_num(psi.get("io")) if isinstance(psi, dict) else None)
    unprotected = tuple(UnprotectedJob(pid=u["pid"], cmd=_text(u.get("cmd")), gpu=_bool(u.get("gpu")),
                                       reason=_text(u.get("reason")))
                        for u in _dicts(d.get("unprotected")) if _int(u.get("pid")) is not None)
    tmux = d.get("tmux") if isinstance(d.get("tmux"), dict) else {}
    return Jobs(loaders=loaders, unprotected=unprotected, tmux_error=_text(tmux.get("error")),
                watch=job_watches(d.get("watch")), no_proc=_bool(d.get("no_proc")) is True,
                clocks=clocks(d.get("clocks")))


def clocks(rows: Any) -> Tuple[Clock, ...]:
    """The box's clocks with a kind and a time, soonest first; names stay text."""
    out = [Clock(kind=_text(c.get("kind")) or "", at=float(_num(c.get("at")) or 0), what=_text(c.get("what")) or "",
                 source=_text(c.get("source")) or "", action=_text(c.get("action")) or "")
           for c in _dicts(rows)[:20] if _text(c.get("kind")) and _num(c.get("at")) is not None]
    return tuple(sorted(out, key=lambda c: c.at))


# -- watched jobs ---------------------------------------------------------------------------
MAX_WATCH = 64  # the contract's bound; more is cut, not trusted
MAX_EVIDENCE = 20


def _fraction(value: Any) -> Optional[float]:
    v = _num(value)
    return None if v is None or not 0 <= v <= 1 else float(v)


def _nonneg(value: Any) -> Optional[float]:
    v = _num(value)
    return None if v is None or v < 0 else v


def job_progress(d: Any) -> Optional[JobProgress]:
    if not isinstance(d, dict):
        return None
    return JobProgress(fraction=_fraction(d.get("fraction")), done=_nonneg(d.get("done")),
                       total=_nonneg(d.get("total")), unit=_text(d.get("unit")),
                       rate=_nonneg(d.get("rate")), eta_seconds=_nonneg(d.get("eta_seconds")),
                       source=_text(d.get("source")), at=_num(d.get("at")))


def job_checkpoint(d: Any) -> Optional[JobCheckpoint]:
    if not isinstance(d, dict) or _text(d.get("path")) is None:
        return None
    return JobCheckpoint(path=d["path"], age_s=_nonneg(d.get("age_s")),
                         stale=d.get("stale") is True, wiped_disk=d.get("wiped_disk") is True)


def job_state(value: Any) -> Optional[JobState]:
    try:
        return JobState(value) if isinstance(value, str) else None
    except ValueError:
        return None


def job_watch(d: Mapping[str, Any]) -> Optional[JobWatch]:
    """One watched job; None without a text id. Names, causes and evidence stay text."""
    jid = _text(d.get("id"))
    if not jid:
        return None
    evidence = d.get("evidence")
    lines = tuple(e for e in evidence[:MAX_EVIDENCE] if isinstance(e, str)) \
        if isinstance(evidence, list) else ()
    return JobWatch(id=jid, kind=_text(d.get("kind")), name=_text(d.get("name")) or "",
                    pid=_int(d.get("pid")), pane=_text(d.get("pane")), state=job_state(d.get("state")),
                    cause=_text(d.get("cause")), evidence=lines, since=_num(d.get("since")),
                    exit=_int(d.get("exit")), progress=job_progress(d.get("progress")),
                    checkpoint=job_checkpoint(d.get("checkpoint")), stuck=job_stuck(d.get("stuck")))


def job_stuck(rows: Any) -> Tuple[Tuple[int, Optional[int], Optional[int], str], ...]:
    """A hung job's stuck GPUs / ranks; rows without a GPU index are dropped."""
    out = []
    for r in _dicts(rows)[:64]:
        gpu = _int(r.get("gpu"))
        if gpu is not None:
            out.append((gpu, _int(r.get("pid")), _int(r.get("rank")), _text(r.get("how")) or "?"))
    return tuple(out)


def job_watches(rows: Any) -> Tuple[JobWatch, ...]:
    out = (job_watch(d) for d in _dicts(rows)[:MAX_WATCH])
    return tuple(j for j in out if j is not None)


def sample(msg: Mapping[str, Any]) -> Sample:
    """A sample message -> Sample. The GPU rows are kept as None when the sample has none and
    says why (gpu_error): the last values stand, as the dashboard showed them."""
    gpu_rows = msg.get("gpus")
    gpu_rows = gpu_rows if isinstance(gpu_rows, list) else []
    error = _text(msg.get("gpu_error"))
    gpus = (tuple(gpu_live(r) for r in gpu_rows if isinstance(r, (list, tuple)))
            if gpu_rows or not error else None)
    procs = proc_usages(msg.get("procs") or ())
    dl: Optional[Tuple[LoaderStats, ...]] = None
    if "dl" in msg or msg.get("gpus") is not None:
        found = (loader_stats(d) for d in _dicts(msg.get("dl")))
        dl = tuple(s for s in found if s is not None)
    more = _int(msg.get("procs_more")) or 0
    utils, compute = wire.idle_inputs(_idle_view(gpu_rows, msg))
    return Sample(seq=_int(msg.get("seq")) or 0, t=_num(msg.get("t")), gpus=gpus, procs=procs,
                  procs_more=more, host=host(msg.get("host")), gpu_error=error, loaders=dl,
                  idle_utils=tuple(_num(u) for u in utils), compute_procs=compute)


def _idle_view(gpu_rows: List[Any], msg: Mapping[str, Any]) -> Dict[str, Any]:
    """The parts of a sample the protocol's idle rule reads (well-formed rows only)."""
    return {"gpus": [r for r in gpu_rows if isinstance(r, (list, tuple)) and len(r) > GPU_UTIL],
            "procs": [r for r in (msg.get("procs") or ()) if isinstance(r, (list, tuple))
                      and len(r) > PROC_FLAGS],
            "procs_more": msg.get("procs_more")}


def notify_event(msg: Mapping[str, Any]) -> Optional[NotifyEvent]:
    """A notify_event push; None without a kind. Title and body are the box's text (data)."""
    kind = _text(msg.get("kind"))
    if not kind:
        return None
    return NotifyEvent(kind=kind, job=_text(msg.get("job")), title=_text(msg.get("title")) or "",
                       body=_text(msg.get("body")) or "", t=_num(msg.get("t")), sent=_bool(msg.get("sent")))
