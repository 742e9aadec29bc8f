"""The idle rule: when a box's GPUs count as idle. The probe's autostop acts on it and
the laptop's idle cost uses the same function, so the two can never disagree."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing stays off the box's import path (attach runs on every connect)
    from typing import Any, Dict, Iterable, List, Optional, Tuple

from remote_probe.wire.rows import PROC_FD_ONLY, PROC_GRAPHICS, GpuCol, proc_flags

DEFAULT_THRESHOLD = 5.0  # % utilization below which a GPU is idle


def idle_inputs(sample: Dict[str, Any]) -> Tuple[List[Optional[float]], int]:
    """(GPU utilizations, number of compute processes) of a sample: what idle is judged on.

    Graphics contexts and processes seen only through /dev/nvidia* fds are not compute jobs.
    """
    utils = [row[GpuCol.UTIL] for row in sample.get("gpus", ())]
    compute = sum(1 for row in sample.get("procs", ())
                  if not proc_flags(row) & (PROC_GRAPHICS | PROC_FD_ONLY))
    return utils, compute + (sample.get("procs_more") or 0)


def all_idle(utils: Iterable[Optional[float]], compute_procs: int, threshold: float) -> bool:
    """All GPUs below the threshold and no compute process. Unknown utilization or no GPU
    at all is never idle."""
    values = list(utils)
    if not values or any(u is None for u in values):
        return False
    return all(u is not None and u < threshold for u in values) and compute_procs == 0
