"""One job as the box's watch follows it across scans (Tracked), and which jobs get the
watch list's places (watch_order). Stdlib only (Python 3.8)."""

import collections

from remote_probe.watch import jobwatch, progress as progress_mod
from remote_probe.watch.facts import cmdline_of, rank_environ


class Tracked:
    """One job across scans."""

    def __init__(self, job_id, kind, name, pid, pane, started_t, first_seen):
        self.id, self.kind, self.name, self.pid, self.pane = job_id, kind, name, pid, pane
        self.started_t = started_t
        self.first_seen = first_seen
        self.state = None
        self.cause = None
        self.evidence = []
        self.since = first_seen
        self.exit = None
        self.progress = None
        self.progress_at = None  # when the reading was taken (its ETA counts from then)
        self.history = progress_mod.ProgressHistory()
        self.text = None
        self.last_output_t = None
        self.writes = jobwatch.WriteWatch()
        self.checkpoint = None
        self.ckpt_state = None
        self.ended_t = None
        self.gpus = ()
        self.oom_at_start = None
        self.interrupts_before = None  # KeyboardInterrupt lines on the pane at first sight
        self.seen_alive = False
        self.cwd = None
        self.tree = set()  # the job's processes as of the last scan
        self.settle = 0  # scans waited since it ended, for tmux to catch up
        self.dead_seen = None  # monotonic time its pane was first seen dead
        self.step_key = None  # the progress reading last seen (done, fraction)
        self.steps = collections.deque(maxlen=12)  # when the reading moved (epoch), newest last
        self.ranks = {}  # pid -> its distributed rank or None (read once from /proc)
        self.stuck = None  # hung: which GPUs / ranks are stuck (jobwatch.stuck_gpus)
        self.session = None  # a pane's tmux session id (a session gputui was asked to kill)

    @property
    def run(self):
        """This run of the job: a pane runs one job after another."""
        return "%s@%s" % (self.pid, int(self.started_t or self.first_seen))

    def row(self):
        prog = None
        p = self.progress
        if p is not None and p.fraction is not None:
            prog = {"fraction": max(0.0, min(1.0, p.fraction)), "done": p.done, "total": p.total,
                    "unit": p.unit, "rate": p.rate, "eta_seconds": p.eta_seconds,
                    "source": p.source, "at": round(self.progress_at or 0.0, 2)}
        return {"id": self.id, "kind": self.kind, "name": self.name[:200], "pid": self.pid,
                "pane": self.pane, "state": self.state, "cause": self.cause,
                "evidence": [x[:300] for x in self.evidence[:20]], "since": round(self.since, 2),
                "exit": self.exit, "progress": prog, "checkpoint": self.checkpoint,
                "stuck": self.stuck}

    def observe_step(self, reading, now):
        """Note when the job's progress moved (a new step, epoch or fraction)."""
        if reading is None or (reading.fraction is not None and reading.fraction >= 1.0):
            return
        key = (reading.done, reading.fraction, reading.epoch)
        if key == self.step_key:
            return
        if self.step_key is not None or not self.steps:
            self.steps.append(now)
        self.step_key = key

    def step_facts(self):
        """(when progress last moved, its usual time per move) or (None, None)."""
        if not self.steps:
            return None, None
        return self.steps[-1], jobwatch.step_time([(t, 0) for t in self.steps])

    def rank(self, pid):
        if pid not in self.ranks:
            self.ranks[pid] = jobwatch.rank_of(rank_environ(pid), cmdline_of(pid))
        return self.ranks[pid]


def watch_order(pids, gpu_procs, watched, start):
    """The process jobs in the order they get the watch list's MAX_WATCH_JOBS places (plain
    function): GPU processes first, then jobs already watched (a job that lost its place would
    read as ended), then the newest (pids wrap: a low pid can be the newest job). start(pid):
    its start time, None if gone."""
    return sorted(pids, key=lambda p: (p not in gpu_procs, p not in watched, -(start(p) or 0), p))
