"""Clocks that delete data or stop the job (issue 36), on the laptop: the box's `clocks`
(remote_probe/watch/clocks.py: a spot/preemption notice, the provider balance running out) for
`gputui status --json`, and the loud line `gputui status` prints for each. Box text is data:
every string from the box goes through visible()."""

import math
import time
from typing import Any, Dict, List, Optional, Sequence

from tui.core.text import format as fmt
from tui.core.text.boxtext import visible
from tui.core.i18n import _
from tui.core.model import Clock

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


def shutdown_clocks(sessions: List[Dict[str, Any]], now: Optional[float] = None) -> List[Dict[str, Any]]:
    """The laptop's own clocks, from the ledger: a host whose latest session ended on a provider
    whose every release action starts a deletion clock (AutoDL: an instance shut down for 15
    days is released, tui/core/providers.py) -> its clock {..., "host", "at": end + days}."""
    from tui.core.providers import PRESETS
    now = time.time() if now is None else now
    latest: Dict[str, Dict[str, Any]] = {}
    for row in sessions:
        host = row.get("host")
        if isinstance(host, str) and _num(row.get("start")) is not None and (
                host not in latest or row["start"] >= latest[host]["start"]):
            latest[host] = row
    out: List[Dict[str, Any]] = []
    for host, row in latest.items():
        end = _num(row.get("end"))
        preset = next((p for p in PRESETS.values() if p.name == row.get("provider")), None)
        if end is None or preset is None or not preset.actions:
            continue
        days = [a.clock_days for a in preset.actions]
        if not all(days):
            continue  # an action without a clock (a real release) may be how it ended
        at = end + min(d or 0 for d in days) * 86400.0
        out.append({"kind": "shutdown_release", "source": preset.key, "action": "release",
                    "host": host, "at": at, "seconds_left": max(0.0, at - now),
                    "what": "%s: %s" % (visible(host, 60), _(preset.actions[0].clock))})
    out.sort(key=lambda r: float(r["at"]))
    return out


def shutdown_line(clock: Dict[str, Any]) -> str:
    """'!! box: an instance shut down for 15 days is released: … — on 12-21 19:37 (13d 02h)'."""
    return "!! " + _("%(what)s — on %(at)s (in %(left)s)") % {
        "what": clock["what"], "at": time.strftime("%m-%d %H:%M", time.localtime(clock["at"])),
        "left": fmt.duration(clock["seconds_left"])}


def clock_notice(clocks: Sequence[Clock], now: float) -> str:
    """The dashboard's loud line for the soonest clock (model Clocks), counted down to `now`;
    how many more there are after it."""
    first = clocks[0]
    line = clock_line({"kind": first.kind, "at": first.at, "what": first.what, "action": first.action,
                       "seconds_left": max(0.0, first.at - now)})
    if len(clocks) > 1:
        line += _("  (+%d more: gputui status)") % (len(clocks) - 1)
    return line
