"""The box's watch over jobs, kept by the daemon so it works with the laptop closed.

Every sample (cheap, on the event loop) ``observe_sample`` keeps each GPU's utilization
and power; every CAPTURE_EVERY_S ``scan`` (in the daemon's tmux thread) looks at the jobs:
tmux panes (captured: last lines, progress), GPU processes and long-running python
processes outside tmux. Each job gets JobFacts and jobwatch.classify's verdict; progress
comes from progress.parse_progress with a ProgressHistory per job; the checkpoint guard
runs every CHECKPOINT_EVERY_S. A job that ended stays listed, with its last lines, for
KEEP_ENDED_S or until its pane is killed. ``scan`` returns the transitions the notifier
turns into messages (finished, crashed, hung, checkpoint_stale).

The rows are the "watch" field of the jobs block (WATCH_CONTRACT.md; wire/schema.py WATCH_JOB).
Stdlib only (Python 3.8)."""

import collections
import os
import threading
import time

from remote_probe import procfs, tmux_control as tmux
from remote_probe.watch import jobwatch, progress as progress_mod, protection
from remote_probe.watch.tracked import Tracked, watch_order
from remote_probe.watch.facts import (_count, _has_ancestor_in, _tree, cmdline_of, gpu_inputs,  # noqa: F401
                                      kernel_lines, new_lines, pane_name, rank_environ, runtime_text)
from remote_probe.wire import MAX_WATCH_JOBS, GpuCol, ProcCol, proc_flags
from remote_probe.wire.job_kinds import is_inline_code, is_service
from remote_probe.wire.rows import PROC_GRAPHICS, PROC_HOST_PID

CAPTURE_EVERY_S = 3.0        # panes are captured this often, not every tick
CHECKPOINT_EVERY_S = 300.0   # the checkpoint scan walks directories: every 5 min
KEEP_ENDED_S = 24 * 3600.0   # an ended job stays listed this long (or until its pane goes)
CAPTURE_LINES = 80
CRASH_LINES = 40             # an ended job's cause is read from its last 40 lines
GPU_HISTORY_MIN_S = 120.0    # per-GPU samples kept: at least this, else 1.5x the hung window
MAX_TREE = 64                # processes of one job whose writes are watched
MIN_NEWS_S = 20.0            # a job that ran less than this ending cleanly is not news
SETTLE_S = 20.0              # a dead pane without an exit status yet: wait this long for it
MAX_IDLE_PANES = 64          # idle shells captured for jobs too short for any scan
ALIVE = (jobwatch.RUNNING, jobwatch.HUNG, jobwatch.WAITING)
ENDED = (jobwatch.FINISHED, jobwatch.CRASHED)
# Python processes of gputui itself (the attach bridge, the daemon) are not jobs.
OWN_MARKERS = ("remote_probe", "gputui/probe-", "probe-", ".pyz")
# Where there is no /proc (macOS runs the demo's probe) a pane's job is judged from tmux's own
# pane state only: alive while tmux shows a program in front, ended with tmux's exit status.
NO_PROC_CAUSE = "no_proc"
NO_PROC_EVIDENCE = ("no /proc on this machine: judged from tmux's pane state only "
                    "(no process tree, GPU use or writes to watch; hangs cannot be seen)")


class JobWatch:
    def __init__(self, hung_after=jobwatch.HUNG_AFTER_S, stale_after=jobwatch.CHECKPOINT_STALE_S,
                 clock=time.time, proc_known=None):
        # proc_known False: no process facts (no /proc), so no process jobs, no tree, no hang
        self.proc_known = procfs.proc_available() if proc_known is None else proc_known
        self.hung_after = hung_after
        self.stall_min = jobwatch.STALL_MIN_S  # the floor of a progress stall (tests make it short)
        self.stale_after = stale_after
        self.clock = clock
        self.started = clock()
        self.lock = threading.Lock()
        self.gpu_hist = {}   # gpu index -> deque of (t, util, power)
        self.power_limits = {}
        self.pcis = {}  # gpu index -> PCI bus id (the kernel's Xid lines name it)
        self.gpu_procs = {}  # local pid -> (gpu index, MiB)
        self.jobs = {}       # id -> Tracked
        self.last_scan = 0.0
        self.last_ckpt = 0.0
        self.idle_text = {}  # pane id -> text of a pane with no job (idle shell)
        self.killed_sessions = {}  # tmux session id -> when gputui killed it (no news, no row)

    # -- every sample, on the loop ---------------------------------------------------
    def observe_sample(self, sample, inventory=None):
        t = sample.get("t") or self.clock()
        keep = max(GPU_HISTORY_MIN_S, 1.5 * self.hung_after)
        for gpu in (inventory or {}).get("gpus", ()):
            if isinstance(gpu, dict) and "index" in gpu:
                self.power_limits[gpu["index"]] = gpu.get("power_limit")
                self.pcis[gpu["index"]] = gpu.get("pci_bus_id")
        procs = {}
        for row in sample.get("procs", ()):
            if proc_flags(row) & (PROC_HOST_PID | PROC_GRAPHICS):
                continue
            procs[row[ProcCol.PID]] = (row[ProcCol.GPU], row[ProcCol.GPU_MEM] or 0)
        with self.lock:
            for i, row in enumerate(sample.get("gpus") or []):
                hist = self.gpu_hist.setdefault(i, collections.deque())
                hist.append((t, row[GpuCol.UTIL], row[GpuCol.POWER]))
                while hist and hist[0][0] < t - keep:
                    hist.popleft()
            self.gpu_procs = procs

    def due(self, now=None):
        now = self.clock() if now is None else now
        return now - self.last_scan >= CAPTURE_EVERY_S

    # -- what autostop and the notifier ask ---------------------------------------------
    def rows(self):
        with self.lock:
            jobs = list(self.jobs.values())
        jobs.sort(key=lambda j: (j.kind == "python", j.state not in ALIVE, -j.since))
        return [j.row() for j in jobs[:MAX_WATCH_JOBS]]

    def hung_gpus(self):
        """GPUs whose compute processes all belong to hung jobs."""
        with self.lock:
            hung = set()
            busy = set()
            for j in self.jobs.values():
                if j.state == jobwatch.HUNG:
                    hung.update(j.gpus)
                elif j.state in ALIVE:
                    busy.update(j.gpus)
            return hung - busy

    def job_done_since(self, job_id):
        """When the job ended (None while it runs); a job no longer listed counts as
        ended when autostop was armed for it: its pane was killed."""
        with self.lock:
            j = self.jobs.get(job_id)
            if j is None:  # its pane was killed since autostop was armed for it
                return self.last_scan or None
            return j.ended_t if j.state in ENDED else None

    def other_gpu_jobs(self, job_id):
        """Whether a GPU process runs that is not part of job_id (then "release when
        this job ends" waits for it)."""
        with self.lock:
            mine = self.jobs.get(job_id)
            tree = mine.tree if mine is not None else set()
            return any(pid not in tree for pid in self.gpu_procs)

    def newest_start(self):
        """Epoch of the newest running job's start (autostop's "a job just appeared")."""
        now = self.clock()
        with self.lock:
            # a python job outside tmux counts once it has run LONG_RUNNING, as before it was
            # listed within seconds (protection.DETACHED_AFTER): a helper process of a few
            # seconds must not restart autostop's idle window
            starts = [j.started_t for j in self.jobs.values()
                      if j.state in ALIVE and j.started_t is not None
                      and not (j.kind == "python" and now - j.started_t < protection.LONG_RUNNING)]
        return max(starts) if starts else None

    def configure(self, hung_after=None, stale_after=None, stall_min=None):
        if hung_after:
            self.hung_after = float(hung_after)
        if stall_min:
            self.stall_min = float(stall_min)
        if stale_after:
            self.stale_after = float(stale_after)

    # -- a scan, in the daemon's tmux thread ---------------------------------------------
    def scan(self, tmux_status, scan, own_pids=(), now=None):
        """Judge every job now; -> [event dict] for the notifier."""
        now = self.clock() if now is None else now
        self.last_scan = now
        with self.lock:
            hist = {i: list(h) for i, h in self.gpu_hist.items()}
            gpu_procs = dict(self.gpu_procs)
        children, comm = tmux.children_map(scan.stats)
        oom = jobwatch.memory_oom_kills()
        events = []
        seen = set()
        pane_trees = set()
        for s in (tmux_status or {}).get("sessions") or []:
            for w in s.get("windows") or []:
                for p in w.get("panes") or []:
                    job_id = "tmux:" + p["id"]
                    tree = _tree(p.get("pid"), children)
                    pane_trees.update(tree)
                    # /proc is listed only every few seconds on a busy box: a job that
                    # died since is still in the listing; its /proc entry is not
                    for pid in [x for x in tree if not procfs.pid_alive(x)]:
                        tree.discard(pid)
                        comm.pop(pid, None)
                    seen.add(job_id)
                    events += self._pane(job_id, s, w, p, tree, children, comm, scan, gpu_procs,
                                         hist, oom, now)
                    with self.lock:
                        if job_id in self.jobs:
                            self.jobs[job_id].session = s.get("id")
        # without /proc nothing tells a job from the daemon's own children or says its
        # command: no process jobs are judged (never a false "finished" for each)
        candidates = set(pid for pid in gpu_procs if pid not in own_pids) if self.proc_known else set()
        if self.proc_known:
            candidates |= set(protection.python_jobs(scan=scan, now=now))
        candidates -= pane_trees
        candidates -= set(own_pids)
        candidates.discard(os.getpid())
        # the daemon's own children (the simulator's stand-in jobs, its tmux calls) are not jobs;
        # nor JupyterLab, TensorBoard or an editor's server (its notebook kernels still are)
        candidates = set(pid for pid in candidates if scan.ppid(pid) != os.getpid()
                         and (pid in gpu_procs or not (is_service(scan.cmdline(pid))
                                                       or is_inline_code(scan.cmdline(pid)))))
        # a worker of another job (torchrun's ranks, DataLoader workers) is judged as that job,
        # and gputui's own probes are no jobs: both go before the cap, or a root box's workers
        # would fill it and leave the user's newest job unwatched
        jobs = [pid for pid in candidates if not _has_ancestor_in(pid, candidates, scan)
                and scan.cmdline(pid) and not any(m in scan.cmdline(pid) for m in OWN_MARKERS)]
        with self.lock:
            watched = set(j.pid for j in self.jobs.values() if j.state not in ENDED)
        for pid in watch_order(jobs, gpu_procs, watched, scan.start)[:MAX_WATCH_JOBS]:
            cmd = scan.cmdline(pid)
            job_id = "pid:%d" % pid
            seen.add(job_id)
            events += self._process(job_id, pid, cmd, pid in gpu_procs, children, scan,
                                    gpu_procs, hist, oom, now)
        if (tmux_status or {}).get("error") and not (tmux_status or {}).get("missing"):
            # tmux did not answer this time: its panes are unknown, not gone
            with self.lock:
                seen.update(j.id for j in self.jobs.values() if j.kind == "tmux")
        events += self._gone(seen, oom, now)
        for gone in set(self.idle_text) - seen:
            del self.idle_text[gone]
        if now - self.last_ckpt >= CHECKPOINT_EVERY_S:
            self.last_ckpt = now
            events += self._checkpoints(now)
        return events

    def _track(self, job_id, kind, name, pid, pane, started_t, now):
        with self.lock:
            j = self.jobs.get(job_id)
            if j is None or (j.state in ENDED and pid != j.pid):
                fresh = Tracked(job_id, kind, name, pid, pane, started_t, now)
                if j is not None and kind == "tmux":
                    fresh.text = j.text  # the pane's old output is not this run's news
                    fresh.last_output_t = j.last_output_t
                self.jobs[job_id] = j = fresh
            elif pid != j.pid and j.state not in ENDED:
                # the tree's main process moved (a script's python child took the GPU)
                j.pid = pid
            j.name = name
            return j

    def _pane(self, job_id, s, w, p, tree, children, comm, scan, gpu_procs, hist, oom, now):
        dead = bool(p.get("dead"))
        if dead:
            job_pid = None
        elif not self.proc_known:  # tmux's view: a program in front (tmux_control's "running")
            job_pid = p.get("pid") if p.get("running") else None
        else:
            job_pid = tmux.pane_job(p.get("pid"), children, comm, gpu_procs)
        with self.lock:
            old = self.jobs.get(job_id)
            if old is not None:
                old.name = pane_name(s, w, p)  # a renamed session: the name to find it by now
        if dead:
            if old is not None and old.state in ENDED and old.pid != p.get("pid") and not old.dead_seen:
                old = None  # a job before this one ended in the shell; now the pane died
            if old is None:
                started = p.get("started")
                # A pane that died before any scan saw it run: new since we started
                # (a crash in its first seconds) is news; an old one is history.
                j = self._track(job_id, "tmux", pane_name(s, w, p), p.get("pid"), p["id"],
                                started, now)
                j.seen_alive = started is not None and started >= self.started - 5
            else:
                j = old
            if j.state in ENDED:
                return []
            text = self._capture(j, now)
            if p.get("dead_status") is None and p.get("dead_signal") is None:
                # tmux marks the pane dead before it has reaped the process (seconds on a
                # loaded box): a crash its last lines show is judged now; a clean end waits
                # for the exit status, and a tmux that never says is judged without it
                lines = progress_mod.screen_lines(text) if text else []
                if j.dead_seen is None:
                    j.dead_seen = time.monotonic()
                if (jobwatch.crash_cause(lines[-CRASH_LINES:])[0] is None
                        and time.monotonic() - j.dead_seen < SETTLE_S):
                    return []
            return self._judge(j, False, p.get("dead_status"), p.get("dead_signal"),
                               text, (), gpu_procs, hist, oom, now)
        if job_pid is None:
            if old is None or old.state in ENDED or old.state is None:
                # An idle shell, or a job already judged; a job that started and died
                # between two scans shows only as new lines with a crash in them.
                return self._short_lived(job_id, s, w, p, old, now)
            if not procfs.pid_alive(p.get("pid", 0)):
                return []  # the pane's own process ended: tmux reports its status next scan
            if old.settle < 1:
                old.settle += 1  # its last words may still be in the pty: judge next scan
                return []
            # The job typed into the pane's shell ended; the shell lives on.
            return self._judge(old, False, None, None, self._capture(old, now), (), gpu_procs,
                               hist, oom, now)
        j = self._track(job_id, "tmux", pane_name(s, w, p), job_pid, p["id"],
                        scan.start(job_pid), now)
        j.cwd = p.get("path") or None
        j.seen_alive = True
        return self._judge(j, True, None, None, self._capture(j, now), tree, gpu_procs, hist,
                           oom, now)

    def _short_lived(self, job_id, s, w, p, old, now):
        if not procfs.pid_alive(p.get("pid", 0)):
            return []  # the pane itself is dying: judged with its exit status next scan
        if len(self.idle_text) > MAX_IDLE_PANES and job_id not in self.idle_text:
            return []
        try:
            text = tmux.capture(p["id"], CAPTURE_LINES)
        except tmux.TmuxError:
            return []
        before = self.idle_text.get(job_id)
        self.idle_text[job_id] = text
        started = p.get("started")
        if before is None and started is not None and started >= max(self.started - 5, now - 120):
            before = ""  # a pane opened since we watch: all it shows is this run's
        if before is None or text == before:
            return []  # first sight (history, not news), or nothing new
        old_lines = progress_mod.screen_lines(before)
        lines = progress_mod.screen_lines(text)
        fresh = new_lines(old_lines, lines)
        cause, line = jobwatch.crash_cause(fresh[-CRASH_LINES:])
        if cause is None or _count(lines, line) <= _count(old_lines, line):
            return []  # no crash, or the one already on screen (and judged) before
        with self.lock:
            j = Tracked(job_id, "tmux", pane_name(s, w, p), None, p["id"], None, now)
            j.seen_alive = True
            self.jobs[job_id] = j
        j.text = text
        return self._judge(j, False, None, None, "\n".join(fresh), (), {}, {}, None, now)

    def _process(self, job_id, pid, cmd, on_gpu, children, scan, gpu_procs, hist, oom, now):
        kind = "gpu" if on_gpu else "python"
        j = self._track(job_id, kind, jobwatch.sanitize_line(cmd), pid, None, scan.start(pid), now)
        if j.kind != kind and on_gpu:
            j.kind = kind
        j.seen_alive = True
        if j.cwd is None:
            try:
                j.cwd = os.readlink("%s/%d/cwd" % (procfs.PROC, pid))
            except OSError:
                pass
        return self._judge(j, True, None, None, None, _tree(pid, children), gpu_procs, hist,
                           oom, now)

    def session_killed(self, session_id, now=None):
        """gputui is killing this tmux session (the app's kill): its jobs leave the list
        without news; a pane that closes on its own is judged (see _gone)."""
        now = self.clock() if now is None else now
        with self.lock:
            self.killed_sessions = dict((k, t) for k, t in self.killed_sessions.items()
                                        if now - t < KEEP_ENDED_S)
            self.killed_sessions[session_id] = now

    def _gone(self, seen, oom, now):
        """Jobs not seen this scan: a process job that ended; a pane that was killed by
        gputui, or by hand after its job had ended (dropped); a pane that closed while its job
        ran, which is how a job started as the pane's own command (`tmux new -s train
        ./train.sh`) ends: judged from its last screen and the kernel, and kept listed."""
        events = []
        with self.lock:
            jobs = list(self.jobs.values())
            killed = set(self.killed_sessions)
        for j in jobs:
            if j.id in seen:
                if j.state in ENDED and now - (j.ended_t or now) > KEEP_ENDED_S:
                    with self.lock:
                        self.jobs.pop(j.id, None)
                continue
            if j.kind == "tmux" and j.pane is not None:
                if j.state in ALIVE and j.seen_alive and j.session not in killed:
                    j.pane = None  # gone with it: nothing to attach to
                    events += self._judge(j, False, None, None, j.text, (), {}, {}, oom, now,
                                          pane_closed=True)
                    continue
                with self.lock:
                    self.jobs.pop(j.id, None)
                continue
            if j.state in ENDED:
                if now - (j.ended_t or now) > KEEP_ENDED_S:
                    with self.lock:
                        self.jobs.pop(j.id, None)
                continue
            events += self._judge(j, False, None, None, None, (), {}, {}, None, now)
        return events

    def _capture(self, j, now):
        """The pane's last lines; when its text changed is "last output"."""
        if j.pane is None:
            return None
        try:
            text = tmux.capture(j.pane, CAPTURE_LINES)
        except tmux.TmuxError:
            return j.text
        if text != j.text:
            if j.text is not None or j.last_output_t is None:
                j.last_output_t = now
            j.text = text
        return text

    def _judge(self, j, alive, exit_status, exit_signal, text, tree, gpu_procs, hist, oom, now,
               pane_closed=False):
        lines = progress_mod.screen_lines(text) if text else []
        while lines and not lines[-1].strip():
            lines.pop()
        if alive:
            reading = progress_mod.parse_progress(text) if text else None
            if reading is not None:
                j.progress = progress_mod.with_history(reading, j.history, now)
                j.progress_at = now
                j.observe_step(reading, now)
            mine = [(gpu_procs[pid][0], gpu_procs[pid][1]) for pid in tree or (j.pid,)
                    if pid in gpu_procs]
            j.gpus = tuple(sorted(set(g for g, _ in mine)))
            j.tree = set(tree or (j.pid,))
            if j.oom_at_start is None:
                j.oom_at_start = oom
            if j.interrupts_before is None and text is not None:
                j.interrupts_before = jobwatch.interrupt_lines(lines[-CRASH_LINES:])
            counts = {pid: jobwatch.proc_chars_written(pid, procfs.PROC) for pid in list(tree)[:MAX_TREE]}
            last_write = j.writes.observe(now, counts)
        else:
            last_write = None
        samples, limit = [], None
        gpu_samples, limits, gpu_pids = {}, {}, {}
        if j.gpus:
            samples = hist.get(j.gpus[0], [])
            limit = self.power_limits.get(j.gpus[0])
            for g in j.gpus:
                gpu_samples[g] = hist.get(g, [])
                limits[g] = self.power_limits.get(g)
            for pid in sorted(tree or (j.pid,)):
                if pid in gpu_procs:
                    gpu_pids.setdefault(gpu_procs[pid][0], []).append((pid, j.rank(pid)))
        last_step_t, step_s = j.step_facts() if alive else (None, None)
        vram = sum(m for pid, (g, m) in gpu_procs.items() if pid in (tree or (j.pid,)))
        oom_kills = 0
        if not alive and oom is not None and j.oom_at_start is not None:
            oom_kills = max(0, oom - j.oom_at_start)
        facts = jobwatch.JobFacts(
            now, alive, exit_status=exit_status, exit_signal=exit_signal,
            last_lines=lines[-CRASH_LINES:], samples=samples, power_limit=limit,
            vram_mib=vram if j.gpus else None, last_output_t=j.last_output_t,
            last_write_t=last_write, started_t=j.started_t or j.first_seen,
            kernel=() if alive else kernel_lines(j.tree | {j.pid}, j.started_t or j.first_seen,
                                                 [self.pcis.get(g) for g in j.gpus]),
            uses_gpu=bool(j.gpus), oom_kills=oom_kills, interrupts_before=j.interrupts_before or 0,
            last_step_t=last_step_t, step_s=step_s, writes=j.writes, gpu_samples=gpu_samples or None,
            power_limits=limits, gpu_pids=gpu_pids, stall_min=self.stall_min,
            pane_closed=pane_closed,
            progress=j.progress.fraction if j.progress is not None and not alive else None)
        verdict = jobwatch.classify(facts, self.hung_after)
        if alive and not self.proc_known:
            verdict = no_proc_verdict(lines)  # "waiting"/"hung" would be guesses here
        if not alive and verdict.state not in ENDED:
            verdict.state = jobwatch.FINISHED
        before = j.state
        j.cause = verdict.cause
        j.evidence = [x for x in verdict.evidence.split("\n") if x][:20]
        j.exit = verdict.exit_status
        j.stuck = verdict.stuck if verdict.state == jobwatch.HUNG else None
        if verdict.state == before:
            return []
        j.state = verdict.state
        j.since = now
        if j.state in ENDED:
            j.ended_t = now
            if j.kind == "tmux" and j.text is not None:
                self.idle_text[j.id] = j.text  # what was on screen when it was judged
            if j.progress is not None and j.state == jobwatch.FINISHED and j.cause == "exit_0":
                j.progress.eta_seconds = 0.0
        if j.state in (jobwatch.FINISHED, jobwatch.CRASHED, jobwatch.HUNG) and j.seen_alive:
            if j.state == jobwatch.FINISHED and (
                    j.kind == "python" or now - (j.started_t or j.first_seen) < MIN_NEWS_S):
                # a long python process outside tmux ending is no news, nor a command of a
                # few seconds (a prompt's git, an rc file's helper)
                return []
            return [self._event(j.state, j, now)]
        return []

    def _event(self, kind, j, now):
        ran = now - (j.started_t or j.first_seen)
        return {"kind": kind, "job": j.id, "run": j.run, "runtime_s": ran, "fields": {
            "job": j.name, "cause": j.cause, "evidence": "\n".join(j.evidence),
            "runtime": runtime_text(ran)}}

    def _checkpoints(self, now):
        events = []
        with self.lock:
            jobs = [j for j in self.jobs.values() if j.state in ALIVE and j.cwd]
        for j in jobs:
            newest = jobwatch.newest_checkpoint([j.cwd])
            if newest is not None and j.started_t is not None and newest[1] < j.started_t - 1:
                newest = None  # written before this job started: another run's, not this job's
            st = jobwatch.checkpoint_status(newest, now, j.started_t, self.stale_after)
            if st["state"] == "none_yet":
                j.checkpoint = None
            else:
                age = st["age_seconds"]
                if age is None:
                    age = now - (j.started_t or now)
                j.checkpoint = {"path": st["path"] or "", "age_s": round(age, 1),
                                "stale": st["state"] in ("stale", "none"),
                                "wiped_disk": st["on_wiped_disk"]}
            stale = j.checkpoint is not None and j.checkpoint["stale"]
            if stale and j.ckpt_state != "stale":
                ev = self._event("checkpoint_stale", j, now)
                ev["fields"].update(age=runtime_text(j.checkpoint["age_s"]),
                                    path=j.checkpoint["path"] or "none written yet")
                ev["run"] = "%s|%s" % (j.run, j.checkpoint["path"])
                events.append(ev)
            j.ckpt_state = "stale" if stale else "ok"
        return events



def no_proc_verdict(lines):
    """A live pane's verdict with no process facts: running, because tmux shows a program in
    front of it; the evidence says what cannot be judged."""
    return jobwatch.Verdict(jobwatch.RUNNING, NO_PROC_CAUSE,
                            "\n".join([NO_PROC_EVIDENCE] + jobwatch.tail(lines)))
