"""Clocks that delete data or stop the job (issue 36), on the laptop: the box's `clocks`
(remote_probe/clocks.py: a spot/preemption notice, the provider balance running out) for
`gputui status --json`, and the loud line `gputui status` prints for each. Box text is data:
every string from the box goes through visible()."""

import math
import time
from typing import Any, Dict, List, Optional

from tui.core import format as fmt
from tui.core.boxtext import visible
from tui.core.i18n import _

FIELDS = ("kind", "source", "action", "at", "seconds_left", "what")


def _num(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def clocks_of(reply: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The snapshot's clocks that have a time, soonest first (what `status --json` lists)."""
    out = []
    for c in reply.get("clocks") or []:
        if not isinstance(c, dict) or _num(c.get("at")) is None:
            continue
        row: Dict[str, Any] = {k: c.get(k) for k in FIELDS}
        left = _num(c.get("seconds_left"))
        row["seconds_left"] = None if left is None else max(0.0, left)
        out.append(row)
    out.sort(key=lambda r: float(r["at"]))
    return out


def clock_line(clock: Dict[str, Any]) -> str:
    """'!! AWS spot interruption (terminate) in 9m 12s, at 19:36 UTC: save and copy off now'."""
    left = clock.get("seconds_left")
    when = time.strftime("%H:%M UTC", time.gmtime(clock["at"]))
    if clock.get("kind") == "balance_zero":
        todo = _("top up, or save your work and copy it off before the box stops")
    elif clock.get("action") in ("stop", "hibernate"):
        todo = _("save a checkpoint now")
    else:
        todo = _("save a checkpoint and copy it off now: the disk goes with the box")
    return "!! " + _("%(what)s in %(left)s, at %(at)s: %(todo)s") % {
        "what": visible(clock.get("what") or clock.get("kind"), 200),
        "left": fmt.duration(left) if left is not None else "?", "at": when, "todo": todo}


def clock_lines(clocks: List[Dict[str, Any]]) -> List[str]:
    return [clock_line(c) for c in clocks]
