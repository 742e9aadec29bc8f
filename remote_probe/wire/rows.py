"""Columnar rows: per-GPU and per-process values travel as lists, not objects.

Column order is given by GPU_FIELDS and PROC_FIELDS; code reads a column by its name
(``row[ProcCol.PID]``), never by a bare number. Static facts (GPU names, memory totals,
process command lines) are sent once in ``inventory`` / ``proc_meta`` instead of every
second, which keeps an 8-GPU sample under 2 KB.
"""

from __future__ import annotations

import heapq

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing stays off the box's import path (attach runs on every connect)
    from typing import Any, Callable, Dict, List, Sequence, Tuple

from remote_probe.wire.messages import MAX_PROC_ROWS

if TYPE_CHECKING:
    Row = List[Any]

# Per-GPU dynamic columns, sent every sample. None means "not available on this GPU".
GPU_FIELDS = (
    "util",  # GPU utilization %
    "mem_util",  # memory controller utilization %
    "mem_used",  # MiB
    "temp",  # degrees C
    "power",  # W
    "clock_sm",  # MHz
    "clock_mem",  # MHz
    "pstate",  # 0..15
    "fan",  # %
    "throttle",  # NVML clock-event reason mask (messages.throttle_names)
    "ecc_errors",  # volatile uncorrected ECC errors
)


class GpuCol:
    """Index of each GPU_FIELDS column in a GPU row."""
    UTIL, MEM_UTIL, MEM_USED, TEMP, POWER, CLOCK_SM, CLOCK_MEM, PSTATE, FAN, THROTTLE, \
        ECC_ERRORS = range(11)


# Per-GPU static facts, sent in the inventory.
GPU_STATIC_FIELDS = (
    "index", "name", "uuid", "pci_bus_id", "minor", "mem_total", "power_limit",
    "clock_sm_max", "clock_mem_max", "mig_mode", "virt_mode", "mig_devices",
)
# Per GPU-process columns, sent every sample. What cannot change while a process
# lives (user, command, start, the host pid it was mapped from) is in PROC_META_FIELDS.
PROC_FIELDS = (
    "pid",
    "gpu",  # GPU index
    "gpu_mem",  # MiB, None when the driver hides it (containers, MIG)
    "cpu",  # % of one core, integer
    "rss",  # MiB
    "flags",  # PROC_* bits below; 0 = a compute process visible in this /proc
    # Appended columns (a reader takes a shorter row, the missing ones as None):
    "ppid",  # parent pid in this /proc (the tree view); None for host pids
)
# The columns every probe of protocol 1 has sent; a row has at least these.
PROC_MIN_FIELDS = 6


class ProcCol:
    """Index of each PROC_FIELDS column in a process row."""
    PID, GPU, GPU_MEM, CPU, RSS, FLAGS, PPID = range(7)


# Bits of a process row's "flags" column.
PROC_HOST_PID = 1  # pid from the host namespace, not visible in this container's /proc
PROC_GRAPHICS = 2  # a graphics (not compute) context
PROC_FD_ONLY = 4  # found through an open /dev/nvidiaN, not reported by the driver
# Per-process facts that do not change while the process lives (sent in proc_meta).
PROC_META_FIELDS = ("pid", "user", "cmd", "start", "host_pid")


def gpu_row(values: Dict[str, Any]) -> Row:
    """A GPU dict -> its columnar row."""
    return [values.get(k) for k in GPU_FIELDS]


def gpu_dict(row: Sequence[Any]) -> Dict[str, Any]:
    return dict(zip(GPU_FIELDS, row))


def proc_row(values: Dict[str, Any]) -> Row:
    """A process dict (with "local" and "kind") -> its columnar row."""
    flags = (0 if values.get("local", 1) else PROC_HOST_PID)
    kind = values.get("kind", "C")
    flags |= PROC_GRAPHICS if kind == "G" else (PROC_FD_ONLY if kind == "?" else 0)
    cpu = values.get("cpu")
    return [values.get("pid"), values.get("gpu"), values.get("gpu_mem"),
            None if cpu is None else int(round(cpu)), values.get("rss"), flags, values.get("ppid")]


def proc_dict(row: Sequence[Any]) -> Dict[str, Any]:
    """A columnar row -> dict, with the derived "local" and "kind" spelled out."""
    d = dict(zip(PROC_FIELDS, row))
    flags = d.get("flags")
    if not isinstance(flags, int) or isinstance(flags, bool):
        flags = 0
    d["local"] = 0 if flags & PROC_HOST_PID else 1
    d["kind"] = "G" if flags & PROC_GRAPHICS else ("?" if flags & PROC_FD_ONLY else "C")
    return d


def proc_flags(row: Sequence[Any]) -> int:
    """A process row's flags, 0 when missing or not an integer."""
    flags = row[ProcCol.FLAGS] if len(row) > ProcCol.FLAGS else 0
    return flags if isinstance(flags, int) and not isinstance(flags, bool) else 0


def proc_pids(sample: Dict[str, Any], local_only: bool = False) -> List[Any]:
    """The pids of a sample's process rows (only those in this /proc if local_only)."""
    return [row[ProcCol.PID] for row in sample.get("procs", ())
            if not (local_only and proc_flags(row) & PROC_HOST_PID)]


def _gpu_mem_of(proc: Dict[str, Any]) -> Any:
    return proc.get("gpu_mem") or 0


def cap_procs(procs: List[Dict[str, Any]], limit: int = MAX_PROC_ROWS,
              key: Callable[[Any], Any] = _gpu_mem_of) -> Tuple[List[Any], int]:
    """-> (the `limit` processes with the most GPU memory, how many were left out).

    The one place a sample's process rows are cut (the sampler calls it before it spends
    a /proc lookup on each); the sample says "procs_more" so the UI can say "and N more".
    """
    if len(procs) <= limit:
        return procs, 0
    return heapq.nlargest(limit, procs, key=key), len(procs) - limit
