"""Plain helpers for the tmux panel: table rows, the attach command, advice."""

import shlex

from tui.core import format as fmt
from tui.core.boxtext import visible


def pane_rows(sessions, now):
    """One row per pane: (key, session, window, pane, command, running for, attached)."""
    rows = []
    for s in sessions:
        for w in s["windows"]:
            for p in w["panes"]:
                started = p.get("started")
                rows.append({
                    "key": p["id"], "session_id": s["id"], "session": s["name"],
                    "window": "%d:%s" % (w["index"], w["name"]), "pane": p["id"],
                    "command": p["command"] + ("" if p["running"] else " (idle shell)"),
                    "running": p["running"],
                    "elapsed": fmt.duration(now - started) if started else "n/a",
                    "attached": "●" if s["attached"] else "",
                    "path": p.get("path"),
                })
    return rows


def attach_argv(target, session_id, ssh_binary="ssh"):
    """The real terminal hand-off: `ssh -t HOST tmux attach -t $ID` with the user's ssh.

    The remote command is one shell word list, quoted: session ids look like `$3`.
    """
    argv = [ssh_binary, "-t"] + target.ssh_args()  # -F -p -l -i -J -o as the user gave them
    argv += ["--", target.host]
    argv.append("tmux attach-session -t %s" % shlex.quote(session_id))
    return argv


def unprotected_advice(job):
    """Plain text (box argv made visible); the UI still shows it as Text, never markup:
    a Hydra override like `data.paths=[/data/a]` is text, not a closing tag."""
    return ("pid %s `%s` %s. Start the next run from gputui's tmux panel (t, then n) so it "
            "survives disconnects." % (visible(job["pid"]), visible(job.get("cmd") or "?", limit=60),
                                       visible(job.get("reason"))))


def safe_session_name(name):
    """tmux forbids ':' and '.' in session names; say so instead of letting tmux mangle them."""
    name = name.strip()
    if not name:
        return None, "a job needs a name"
    if any(c in name for c in ":."):
        return None, "tmux session names cannot contain ':' or '.'"
    return name, None
