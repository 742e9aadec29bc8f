"""Plain helpers for the tmux panel: table rows, the attach command, advice."""

import shlex
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from tui.core.text import format as fmt
from tui.core.text.boxtext import visible
from tui.core.destination import SshTarget
from tui.core.i18n import N_, _

# The probe's reason for an unprotected job (remote_probe.watch.protection.verdict), shown translated.
PROBE_REASONS = (N_("will die if this SSH connection drops"),)


def pane_rows(sessions: Sequence[Dict[str, Any]], now: float) -> List[Dict[str, Any]]:
    """One row per pane: (key, session, window, pane, command, running for, attached).

    Fields the probe left out (a hostile or older probe) read as unknown, never as a crash."""
    rows = []
    for s in sessions:
        for w in s.get("windows") or []:
            for p in w.get("panes") or []:
                if p.get("id") is None:
                    continue
                started = p.get("started")
                running = bool(p.get("running"))
                # None: the box has no /proc to see what runs below the pane's shell
                note = _(" (cannot tell: no /proc)") if "running" in p and p["running"] is None \
                    and not p.get("dead") else _(" (idle shell)")
                rows.append({
                    "key": p["id"], "session_id": s.get("id"), "session": s.get("name") or "?",
                    "window": "%s:%s" % ("?" if w.get("index") is None else w["index"], w.get("name") or ""),
                    "pane": p["id"],
                    "command": (p.get("command") or "?") + ("" if running else note),
                    "running": running,
                    "elapsed": fmt.duration(now - started) if started else "n/a",
                    "attached": "●" if s.get("attached") else "",
                    "path": p.get("path"),
                })
    return rows


# The tmux table at 80 columns has ~38 (the preview takes the other half). What goes first:
# COMMAND is the pane's program ("python3", "bash"), the preview shows what it prints; the
# session name is what tells jobs apart, so it is cut last
TMUX_SHRINK = ("command", "job", "session")
# the preview's title names the pane, the session says the rest; ATT is "●" when a terminal is
# attached (rare on a rented box): a session name cut to "train v…" says less
TMUX_DROP_FIRST = ("window", "pane", "attached")
TMUX_DROP_LAST = ("elapsed",)
SOFT_CELL = 12  # before a column is dropped, the shrinkable ones give up what is beyond this
MIN_CELL = 6  # ... and after, down to this (or their header, if wider)


def tmux_column_widths(natural: Sequence[Tuple[str, int, int]], width: int,
                       padding: int = 2) -> Dict[str, int]:
    """The tmux table's columns for a table `width` columns wide: key -> width, in the
    order given; a column left out is hidden. natural: (key, header width, widest cell) per
    column; each column also takes `padding` columns (the table's cell padding).

    While too wide: COMMAND, JOB, then SESSION shrink to SOFT_CELL; WINDOW, PANE, then ATT
    go; the three shrink on, in that order, to their header (at least MIN_CELL); RUNNING goes.
    Room left over goes back to the shrunk columns, the session first. What still does not fit
    scrolls sideways."""
    full = {key: max(head, cell) for key, head, cell in natural}
    heads = {key: head for key, head, _cell in natural}
    widths = dict(full)

    def over() -> int:
        return sum(w + padding for w in widths.values()) - width

    def shrink(limit: Callable[[str], int]) -> None:
        for key in TMUX_SHRINK:
            if key in widths and over() > 0:
                widths[key] -= max(0, min(over(), widths[key] - limit(key)))

    def drop(keys: Sequence[str]) -> None:
        for key in keys:
            if over() > 0:
                widths.pop(key, None)

    shrink(lambda k: max(heads[k], min(SOFT_CELL, full[k])))
    drop(TMUX_DROP_FIRST)
    shrink(lambda k: max(heads[k], min(MIN_CELL, full[k])))
    drop(TMUX_DROP_LAST)
    for key in reversed(TMUX_SHRINK):  # what the drops freed goes back, the session first
        if key in widths and over() < 0:
            widths[key] = min(full[key], widths[key] - over())
    return {key: widths[key] for key, _h, _c in natural if key in widths}


def attach_argv(target: SshTarget, session_id: str, ssh_binary: str = "ssh") -> List[str]:
    """The real terminal hand-off: `ssh -t HOST tmux attach -t $ID` with the user's ssh.

    The remote command is one shell word list, quoted: session ids look like `$3`.
    """
    argv = [ssh_binary, "-t"] + target.ssh_args()  # -F -p -l -i -J -o as the user gave them
    argv += ["--", target.host]
    argv.append("tmux attach-session -t %s" % shlex.quote(session_id))
    return argv


def no_proc_notice(no_proc: bool) -> Optional[str]:
    """The dashboard's line for a box without /proc (the demo's probe on macOS): what the
    probe cannot see there, so an empty list is not read as "nothing to worry about"."""
    if not no_proc:
        return None
    return _("No /proc on this machine: jobs outside tmux, their SSH protection and DataLoader "
             "workers cannot be seen; tmux panes are judged from tmux's own state")


def unprotected_advice(job: Dict[str, Any]) -> str:
    """Plain text (box argv made visible); the UI still shows it as Text, never markup:
    a Hydra override like `data.paths=[/data/a]` is text, not a closing tag."""
    return (_("pid %s `%s` %s. Start the next run from gputui's tmux panel (t, then n) so it "
              "survives disconnects.") % (visible(job["pid"]), visible(job.get("cmd") or "?", limit=60),
                                       visible(_(job["reason"]) if job.get("reason") else "")))  # _("") is the catalog header


def safe_session_name(name: str) -> Tuple[Optional[str], Optional[str]]:
    """tmux forbids ':' and '.' in session names; say so instead of letting tmux mangle them."""
    name = name.strip()
    if not name:
        return None, N_("a job needs a name")
    if any(c in name for c in ":."):
        return None, N_("tmux session names cannot contain ':' or '.'")
    return name, None
