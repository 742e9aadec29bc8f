"""tmux on the box: list sessions and panes, capture a pane, start/kill/rename jobs.

Every call is an argv list (never a shell), and sessions and panes are targeted by their
ids ($3, %7), so a session called `it's "mine" ☃` is just data.
"""

import os
import shutil
import subprocess

TIMEOUT = 5.0
SEP = "\x1f"  # unit separator: cannot appear in names typed by a user
SHELLS = frozenset(("bash", "zsh", "sh", "dash", "fish", "ksh", "tcsh", "csh", "login", "tmux"))
PANE_FORMAT = SEP.join((
    "#{session_id}", "#{session_name}", "#{session_attached}", "#{session_created}",
    "#{window_id}", "#{window_index}", "#{window_name}", "#{pane_id}", "#{pane_index}",
    "#{pane_pid}", "#{pane_current_command}", "#{pane_current_path}", "#{pane_active}",
    "#{pane_dead}", "#{pane_dead_status}", "#{pane_dead_signal}"))
FIELDS = 16


class TmuxError(Exception):
    """A tmux command failed; str() is tmux's own message."""


class TmuxMissing(TmuxError):
    def __init__(self):
        self.install = install_command()
        super().__init__("tmux is not installed on the box")


def install_command():
    """How this box could install tmux: {"argv", "can_run", "why"}."""
    root = os.geteuid() == 0
    for tool, argv in (("apt-get", ["apt-get", "install", "-y", "tmux"]),
                       ("dnf", ["dnf", "install", "-y", "tmux"]),
                       ("yum", ["yum", "install", "-y", "tmux"]),
                       ("apk", ["apk", "add", "tmux"]),
                       ("pacman", ["pacman", "-S", "--noconfirm", "tmux"]),
                       ("zypper", ["zypper", "--non-interactive", "install", "tmux"])):
        if shutil.which(tool):
            return {"argv": argv, "can_run": root,
                    "why": None if root else "needs root (you are not root on the box)"}
    if shutil.which("conda"):  # works without root, into the base env
        return {"argv": ["conda", "install", "-y", "-c", "conda-forge", "tmux"], "can_run": True,
                "why": None}
    return {"argv": None, "can_run": False, "why": "no known package manager on the box"}


def _tmux():
    path = shutil.which("tmux")
    if not path:
        raise TmuxMissing()
    return path


def run(*args, timeout=TIMEOUT):
    try:
        out = subprocess.run([_tmux()] + list(args), stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise TmuxError("tmux did not answer within %.0f s" % timeout)
    except OSError as exc:
        raise TmuxError("tmux could not run: %s" % exc)
    if out.returncode != 0:
        msg = out.stderr.decode("utf-8", "replace").strip()
        raise TmuxError(msg or "tmux exited with %d" % out.returncode)
    return out.stdout.decode("utf-8", "replace")


def parse_panes(text):
    """`list-panes -a -F PANE_FORMAT` output -> sessions with windows with panes."""
    sessions = {}
    for line in text.splitlines():
        f = line.split(SEP)
        if len(f) == 14:  # a tmux without the dead-status formats
            f = f + ["", ""]
        if len(f) != FIELDS:
            continue
        (sid, sname, attached, created, wid, widx, wname, pid_, pidx, ppid, cmd, path,
         active, dead, dead_status, dead_signal) = f
        s = sessions.setdefault(sid, {"id": sid, "name": sname, "attached": int(attached or 0),
                                      "created": int(created or 0), "windows": []})
        if not s["windows"] or s["windows"][-1]["id"] != wid:
            s["windows"].append({"id": wid, "index": int(widx), "name": wname, "panes": []})
        s["windows"][-1]["panes"].append({
            "id": pid_, "index": int(pidx), "pid": int(ppid or 0), "command": cmd, "path": path,
            "active": active == "1", "dead": dead == "1",
            "running": bool(cmd) and cmd not in SHELLS and dead != "1",
            # A dead pane (remain-on-exit) keeps how its process ended: the job watch's
            # exit status and signal (remote_probe/watch/loop.py).
            "dead_status": int(dead_status) if dead == "1" and dead_status.isdigit() else None,
            "dead_signal": int(dead_signal) if dead == "1" and dead_signal.isdigit() else None,
        })
    return list(sessions.values())


def list_sessions():
    """-> list of sessions; [] when tmux has no server running."""
    try:
        return parse_panes(run("list-panes", "-a", "-F", PANE_FORMAT))
    except TmuxError as exc:
        if isinstance(exc, TmuxMissing):
            raise
        text = str(exc)
        # asked just as the last session closed: "no current target" (the server has no session
        # left) or "server exited unexpectedly" (it was leaving)
        if ("no server running" in text or "error connecting" in text or "No such file" in text
                or "server exited unexpectedly" in text or "no current target" in text):
            return []
        raise


def capture(pane_id, lines=300):
    """The pane's recent output with its colours (ANSI escapes)."""
    return run("capture-pane", "-p", "-e", "-J", "-t", pane_id, "-S", "-%d" % int(lines))


def new_job(name, command, cwd=None, env=None):
    """Start `command` in a new detached session that outlives any SSH connection.

    The command is typed into the session's shell, so when it ends the pane stays with
    its output, and attaching later shows what happened.
    """
    args = ["new-session", "-d", "-P", "-F", "#{session_id}" + SEP + "#{pane_id}", "-s", name]
    if cwd:
        args += ["-c", os.path.expanduser(cwd)]
    for key, value in sorted((env or {}).items()):
        args += ["-e", "%s=%s" % (key, value)]
    sid, _, pane = run(*args).strip().partition(SEP)
    try:
        # A pane whose process ends (`exec python train.py`, the shell exited) stays, with
        # its last lines and exit status, so the box's watch can say finished or crashed.
        run("set-option", "-w", "-t", pane, "remain-on-exit", "on")
    except TmuxError:
        pass  # an old tmux: the watch then judges the pane by its process tree only
    if command:
        run("send-keys", "-t", pane, "-l", command)
        run("send-keys", "-t", pane, "Enter")
    return {"session": sid, "pane": pane}


def interrupt(pane_id):
    run("send-keys", "-t", pane_id, "C-c")


def kill_session(session_id):
    run("kill-session", "-t", session_id)


def rename_session(session_id, name):
    run("rename-session", "-t", session_id, name)


def install():
    cmd = install_command()
    if not cmd["can_run"]:
        raise TmuxError("cannot install tmux here: %s" % cmd["why"])
    try:
        out = subprocess.run(cmd["argv"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TmuxError("installing tmux failed: %s" % exc)
    text = out.stdout.decode("utf-8", "replace")
    if out.returncode != 0:
        raise TmuxError("installing tmux failed (exit %d): %s" % (out.returncode, text[-500:]))
    return text[-2000:]


def pane_job(pane_pid, children, comm, gpu_pids=()):
    """The pid that makes a pane busy, or None when only shells live under it.

    `pane_current_command` names the pane's foreground program as argv[0]: for
    `./train.sh` (a bash script running python) or `bash -c 'python3 x.py; ...'` that is
    `bash`, a shell, and the pane looked idle while it trained. So the whole process tree
    below the pane's shell is looked at: a GPU process first, then a python one, then any
    other program that is not a shell. children: {pid: [child pids]}; comm: {pid: name}
    (/proc/PID/stat's; a shebang script's is its own file name, e.g. "train.sh").
    """
    gpu = set(gpu_pids)
    found, seen, stack = [], set(), [pane_pid]
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        name = comm.get(pid)
        if pid in gpu:
            return pid
        if name and name not in SHELLS:
            found.append((0 if name.startswith("python") else 1, pid))
        stack.extend(children.get(pid, ()))
    return min(found)[1] if found else None


def pane_tree(pane_pid, children):
    """Every pid in the process tree under (and including) the pane's shell."""
    seen, stack = set(), [pane_pid]
    while stack:
        pid = stack.pop()
        if pid not in seen:
            seen.add(pid)
            stack.extend(children.get(pid, ()))
    return seen


def children_map(stats):
    """{pid: stat tuple with ppid at [2]} -> ({ppid: [pids]}, {pid: comm})."""
    children, comm = {}, {}
    for pid, st in stats.items():
        comm[pid] = st[0]
        children.setdefault(st[2], []).append(pid)
    return children, comm


def running_without_tree(pane):
    """A pane's "running" where no process tree can be read (no /proc: macOS runs the demo's
    probe): tmux's own foreground command says a program runs (True); a shell in front may
    still run a script below it, which only the tree would show: unknown (None), never
    "idle". A dead pane runs nothing."""
    if pane.get("dead"):
        return False
    return True if pane.get("running") else None


def _judge_panes(sessions, scan, gpu_pids=(), tree_known=True):
    """Start times (epoch, "how long it has run") and the tree's verdict on each pane
    (tmux's own view of it when there is no tree to read: tree_known False)."""
    children, comm = children_map(scan.stats)
    for s in sessions:
        for w in s["windows"]:
            for p in w["panes"]:
                p["started"] = scan.start(p["pid"])
                if not tree_known:
                    p["running"] = running_without_tree(p)
                    p["gpu_pids"] = []
                    continue
                if p["dead"] or not p["pid"]:
                    continue
                if p["pid"] not in comm and scan.comm(p["pid"]):  # a pane newer than the listing
                    comm[p["pid"]] = scan.comm(p["pid"])
                job = pane_job(p["pid"], children, comm, gpu_pids)
                p["running"] = job is not None
                # the GPU processes of this pane's job: one job, not one per GPU process too
                p["gpu_pids"] = sorted(pane_tree(p["pid"], children) & set(gpu_pids))
                if job is not None and p["command"] in SHELLS:
                    p["command"] = comm.get(job) or p["command"]  # say what runs: "python3"
    return sessions


def status(scan=None, gpu_pids=()):
    """The jobs block of a sample: sessions, or why there are none. `scan`: a
    procfs.ProcScan to take start times and the process tree from (one /proc pass per
    jobs scan); a fresh one when not given."""
    try:
        sessions = list_sessions()
        if sessions:
            from remote_probe import procfs
            if scan is None:
                scan = procfs.ProcScan()
            _judge_panes(sessions, scan, gpu_pids, tree_known=procfs.proc_available())
        return {"sessions": sessions, "error": None}
    except TmuxMissing as exc:
        return {"sessions": [], "error": str(exc), "missing": True, "install": exc.install}
    except TmuxError as exc:
        return {"sessions": [], "error": str(exc)}
