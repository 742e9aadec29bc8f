"""What the dashboard shows, kept outside the widgets: inventory, latest sample,
history, process facts and connection state. Widgets read it; they never fetch.
"""

import collections
import dataclasses
import time
from typing import Dict, List, Optional

from remote_probe import wire
from tui.core.i18n import N_, _

HISTORY = 600  # samples of history kept for the graphs (10 min at 1 Hz)

# Columns of the process table: (key, title). Sorting uses the key.
PROC_COLUMNS = (
    ("pid", N_("PID")), ("user", N_("USER")), ("gpu", N_("GPU")), ("gpu_mem", N_("GPU MEM")),
    ("cpu", N_("CPU%")), ("rss", N_("RSS")), ("elapsed", N_("ELAPSED")), ("cmd", N_("COMMAND")),
)
SORT_KEYS = tuple(k for k, _ in PROC_COLUMNS)


@dataclasses.dataclass
class ProcRow:
    pid: int
    gpu: Optional[int]
    gpu_mem: Optional[int]
    kind: str
    cpu: Optional[float]
    rss: Optional[int]
    local: bool
    host_pid: Optional[int]
    unprotected: bool
    user: Optional[str]
    cmd: str
    elapsed: Optional[float]


def short_cmd(cmd):
    """'/opt/conda/bin/python3 train.py --bs 64' -> 'python3 train.py --bs 64'.

    The interpreter's directory is noise in a narrow table; the script and its
    arguments are what tell jobs apart.
    """
    head, sep, rest = cmd.partition(" ")
    if head.startswith("/"):
        head = head.rsplit("/", 1)[-1]
    return head + sep + rest


def sort_procs(rows: List[ProcRow], key: str, reverse: bool) -> List[ProcRow]:
    """Sort rows by a column; unknown values (None) always sink to the bottom."""
    known = [r for r in rows if getattr(r, key) is not None]
    unknown = [r for r in rows if getattr(r, key) is None]
    known.sort(key=lambda r: (getattr(r, key), r.pid), reverse=reverse)
    return known + sorted(unknown, key=lambda r: r.pid)


class DashboardState:
    def __init__(self, host_label, clock=time.time):
        self.host_label = host_label
        self.clock = clock
        self.inventory: dict = {}
        self.sample: Optional[dict] = None
        self.gpus: List[dict] = []  # latest per-GPU dynamic dicts
        self.gpu_history: Dict[int, collections.deque] = {}
        self.mem_history: Dict[int, collections.deque] = {}
        self.cpu_history = collections.deque(maxlen=HISTORY)
        self.disks: List[dict] = []  # sent every few samples; the last report stands
        self.proc_meta: Dict[int, dict] = {}
        self.conn_state = "connecting"
        self.conn_detail = ""
        self.rtt_ms: Optional[float] = None
        self.last_sample_at: Optional[float] = None
        self.samples_seen = 0
        self.seqs: List[int] = []  # kept short; tests read gaps from it
        self.jobs: Optional[dict] = None  # {"tmux": {...}, "unprotected": [...], "loaders": {...}}
        self.dl: Dict[int, dict] = {}  # hook stats by trainer pid (latest)
        self.dl_history: Dict[int, collections.deque] = {}  # wait fraction history by pid
        self.sort_key = "gpu_mem"
        self.sort_reverse = True

    # -- updates from the session --------------------------------------------
    def set_inventory(self, inventory):
        self.inventory = inventory or {}
        if self.inventory.get("disks") and not self.disks:
            self.disks = self.inventory["disks"]

    def add_sample(self, sample):
        self.sample = sample
        self.samples_seen += 1
        self.seqs.append(sample["seq"])
        if len(self.seqs) > 100000:
            del self.seqs[:50000]
        self.last_sample_at = sample.get("t")
        if sample.get("gpus") or not sample.get("gpu_error"):
            self.gpus = [wire.gpu_dict(r) for r in sample.get("gpus", [])]
        for i, g in enumerate(self.gpus):
            self.gpu_history.setdefault(i, collections.deque(maxlen=HISTORY)).append(g["util"] or 0)
            total = self.gpu_total(i)
            used = g.get("mem_used")
            self.mem_history.setdefault(i, collections.deque(maxlen=HISTORY)).append(
                100.0 * used / total if used is not None and total else 0)
        if "dl" in sample or sample.get("gpus") is not None:
            seen = set()
            for st in sample.get("dl", ()):
                pid = st["pid"]
                seen.add(pid)
                self.dl[pid] = st
                self.dl_history.setdefault(pid, collections.deque(maxlen=HISTORY)).append(
                    st.get("wait_fraction") or 0.0)
            for pid in list(self.dl):
                if pid not in seen:
                    del self.dl[pid]
            for pid in list(self.dl_history):  # a job that ended takes its history with it
                if pid not in seen:
                    del self.dl_history[pid]
        host = sample.get("host") or {}
        if "disks" in host:
            self.disks = host["disks"]
        if host.get("cpu") is not None:
            self.cpu_history.append(host["cpu"])

    def add_proc_meta(self, procs):
        for m in procs:
            self.proc_meta[m["pid"]] = m
        if len(self.proc_meta) > 5000:  # long sessions: forget the oldest
            for pid in list(self.proc_meta)[:1000]:
                del self.proc_meta[pid]

    def set_jobs(self, jobs):
        self.jobs = jobs

    def unprotected(self):
        return (self.jobs or {}).get("unprotected") or []

    def tmux_sessions(self):
        return ((self.jobs or {}).get("tmux") or {}).get("sessions") or []

    def tmux_error(self):
        return ((self.jobs or {}).get("tmux") or {}).get("error")

    def set_connection(self, state, detail=""):
        self.conn_state, self.conn_detail = state, detail

    # -- derived -------------------------------------------------------------
    def gpu_static(self, index):
        gpus = self.inventory.get("gpus") or []
        return gpus[index] if index < len(gpus) else {}

    def gpu_total(self, index):
        return self.gpu_static(index).get("mem_total")

    def gpu_model(self):
        """'2× A100-SXM4-80GB' for the header; mixed boxes list each model."""
        from tui.core.format import short_gpu_name
        names = [g.get("name") for g in self.inventory.get("gpus") or []]
        if not names:
            return None
        counts = collections.Counter(short_gpu_name(n) for n in names)
        return ", ".join("%d× %s" % (c, n) for n, c in counts.items())

    def no_gpu_reason(self):
        """Why there is no GPU data, or None when there is."""
        if self.sample is not None and self.sample.get("gpu_error"):
            return self.sample["gpu_error"]
        if self.inventory and not self.inventory.get("gpus"):
            return self.inventory.get("reason") or _("no GPU on this box")
        return None

    def data_age(self):
        """Seconds since the newest sample was taken (grows while disconnected)."""
        if self.last_sample_at is None:
            return None
        return max(0.0, self.clock() - self.last_sample_at)

    def proc_rows(self) -> List[ProcRow]:
        if not self.sample:
            return []
        now = self.clock()
        unprotected = {j["pid"] for j in self.unprotected()}
        rows = []
        for raw in self.sample.get("procs", []):
            p = wire.proc_dict(raw)
            meta = self.proc_meta.get(p["pid"], {}) if p["local"] else {}
            start = meta.get("start")
            if p["local"]:
                cmd = short_cmd(meta.get("cmd") or "?")
                if meta.get("host_pid"):
                    cmd += "  (host pid %d)" % meta["host_pid"]
            else:
                cmd = "(host pid, not visible in this container)"
            rows.append(ProcRow(
                pid=p["pid"], gpu=p["gpu"], gpu_mem=p["gpu_mem"], kind=p["kind"] or "?",
                cpu=p["cpu"], rss=p["rss"], local=bool(p["local"]), host_pid=meta.get("host_pid"),
                unprotected=p["pid"] in unprotected, user=meta.get("user"), cmd=cmd,
                elapsed=(now - start) if start else None,
            ))
        return sort_procs(rows, self.sort_key, self.sort_reverse)

    def cycle_sort(self):
        i = SORT_KEYS.index(self.sort_key)
        self.sort_key = SORT_KEYS[(i + 1) % len(SORT_KEYS)]
        self.sort_reverse = self.sort_key in ("gpu_mem", "cpu", "rss", "elapsed")

    def sort_by(self, key):
        if key == self.sort_key:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_key = key
            self.sort_reverse = key in ("gpu_mem", "cpu", "rss", "elapsed")


def loader_views(state):
    """One view per training process: hook stats + outside workers + diagnosis."""
    from tui.core.diagnosis import LoaderFacts, diagnose
    loaders = (state.jobs or {}).get("loaders") or {}
    outside = {t["pid"]: t["workers"] for t in loaders.get("trainers", ())}
    gpu_of = {}
    for raw in (state.sample or {}).get("procs", ()):
        gpu_of.setdefault(raw[wire.ProcCol.PID], raw[wire.ProcCol.GPU])
    host = (state.sample or {}).get("host") or {}
    facts_host = (state.inventory.get("host") or {})
    ncpu = facts_host.get("cpu_limit") or facts_host.get("ncpu")
    views = []
    for pid in sorted(set(state.dl) | set(outside)):
        st = state.dl.get(pid, {})
        workers = outside.get(pid, [])
        gpu = gpu_of.get(pid)
        util = list(state.gpu_history.get(gpu, ()))[-30:] if gpu is not None else []
        facts = LoaderFacts(
            wait_fraction=st.get("wait_fraction"), num_workers=st.get("num_workers", len(workers) if workers else None),
            gpu_util=util, worker_cpu=[w.get("cpu") for w in workers],
            worker_states=[w.get("state") or "?" for w in workers], ncpu=ncpu, box_cpu=host.get("cpu"),
            disk_busy=(loaders.get("disk") or {}).get("busy"),
            io_pressure=(loaders.get("psi") or {}).get("io"), pin_memory=st.get("pin_memory"))
        meta = state.proc_meta.get(pid, {})
        views.append({"pid": pid, "stats": st, "workers": workers, "gpu": gpu,
                      "cmd": short_cmd(meta.get("cmd") or ""), "wait_history": list(state.dl_history.get(pid, ())),
                      "gpu_history": util, "diagnosis": diagnose(facts)})
    return views
