"""What the dashboard shows, kept outside the widgets: inventory, latest sample,
history, process facts and connection state. Widgets read it; they never fetch.
"""

import collections
import dataclasses
import functools
import operator
import re
import time
from typing import Any, Callable, Deque, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from tui.core import from_wire
from tui.core.jobs.proc_tree import tree_order
from tui.core.i18n import N_, _
from tui.core.model import (
    ConnState,
    Disk,
    Gpu,
    GpuFacts,
    GpuLive,
    Host,
    HostFacts,
    Jobs,
    JobWatch,
    LoaderStats,
    LoaderView,
    NotifyEvent,
    ProcMeta,
    ProcRow,
    Sample,
    Worker,
    conn_state,
)

HISTORY = 600  # samples of history kept for the graphs (10 min at 1 Hz)

# Columns of the process table: (key, title). Sorting uses the key.
PROC_COLUMNS = (
    ("pid", N_("PID")), ("user", N_("USER")), ("gpu", N_("GPU")), ("gpu_mem", N_("GPU MEM")),
    ("cpu", N_("CPU%")), ("rss", N_("RSS")), ("elapsed", N_("ELAPSED")), ("cmd", N_("COMMAND")),
)
SORT_KEYS = tuple(k for k, _ in PROC_COLUMNS)


@functools.lru_cache(maxsize=1024)  # every process's command, every sample (proc_rows)
def short_cmd(cmd: str) -> str:
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
    value = operator.attrgetter(key)
    known: List[ProcRow] = []
    unknown: List[ProcRow] = []
    for r in rows:
        (unknown if value(r) is None else known).append(r)
    known.sort(key=operator.attrgetter(key, "pid"), reverse=reverse)
    return known + sorted(unknown, key=_PID)


_PID = operator.attrgetter("pid")


def next_sort_key(current: str, visible: Sequence[str]) -> str:
    """`s`: the next column shown at this width (a hidden one sorted by nothing you see)."""
    keys = [k for k in SORT_KEYS if k in visible] or list(SORT_KEYS)
    if current not in keys:
        return keys[0]
    return keys[(keys.index(current) + 1) % len(keys)]


def _word_pattern(word: str) -> "re.Pattern[str]":
    """`word` where a word of the text starts: not right after an ASCII letter or digit when
    it begins with one (`3` is not found in `python3` nor in pid 29039, `l16` is in `vit_l16`);
    a word that begins with punctuation (`.py`, `--bs`) is found anywhere. Text without ASCII
    word breaks (Chinese) is searched anywhere, as before."""
    head = word[0]
    boundary = r"(?<![0-9a-z])" if head.isascii() and head.isalnum() else ""
    return re.compile(boundary + re.escape(word))


def filter_procs(rows: List[ProcRow], query: str) -> List[ProcRow]:
    """`/`: rows whose command, user or pid hold every word of the query (any case, in any
    order), each at the start of a word: `rank 3` keeps `--rank 3`, not `python3 ... --rank 7`
    (every row had a "3" somewhere, so two words looked like no filter at all)."""
    words = (query or "").casefold().split()
    if not words:
        return rows
    patterns = [_word_pattern(w) for w in words]

    kept = []
    for r in rows:
        hay = " ".join(str(x) for x in (r.pid, r.user or "", r.cmd or "", r.host_pid or "")).casefold()
        if all(p.search(hay) for p in patterns):
            kept.append(r)
    return kept


def _history() -> Deque[float]:
    return collections.deque(maxlen=HISTORY)


class DashboardState:
    """The box as the screens show it. Messages are read into model objects once, as they
    arrive (tui.core.from_wire); what the panels ask for is joined from those."""

    def __init__(self, host_label: str, clock: Callable[[], float] = time.time) -> None:
        self.host_label = host_label
        self.clock = clock
        self.inventory: dict = {}  # the message as it came (billing, release, doctor read it)
        self.sample: Optional[dict] = None  # the newest sample message as it came
        self.latest: Optional[Sample] = None  # ... and read
        self.gpu_facts: Tuple[GpuFacts, ...] = ()
        self.host_facts = HostFacts()
        self.gpus: Tuple[GpuLive, ...] = ()  # latest values per GPU (kept through a gpu_error)
        self.gpu_history: Dict[int, Deque[float]] = {}
        self.mem_history: Dict[int, Deque[float]] = {}
        self.cpu_history: Deque[float] = _history()
        self.host: Optional[Host] = None  # the newest sample's host block
        self.disks: Tuple[Disk, ...] = ()  # sent every few samples; the last report stands
        self.proc_meta: Dict[int, ProcMeta] = {}
        self.conn_state = ConnState.CONNECTING
        self.conn_detail = ""
        self.rtt_ms: Optional[float] = None
        self.last_sample_at: Optional[float] = None
        self.samples_seen = 0
        self.seqs: List[int] = []  # kept short; tests read gaps from it
        self.jobs: Optional[dict] = None  # {"tmux": {...}, "unprotected": [...], "loaders": {...}}
        self.job_model = Jobs()  # the same, read
        self.dl: Dict[int, LoaderStats] = {}  # hook stats by trainer pid (latest)
        self.dl_history: Dict[int, Deque[float]] = {}  # wait fraction history by pid
        self.sort_key = "gpu_mem"
        self.sort_reverse = True
        self.notify_seen: Set[Tuple[Any, ...]] = set()  # notify_event keys already toasted
        self.proc_filter = ""  # `/`: show only processes matching this
        self.proc_tree = False  # `T`: processes under their parents (tui/core/jobs/proc_tree.py)

    # -- updates from the session --------------------------------------------
    def set_inventory(self, inventory: Optional[dict]) -> None:
        self.inventory = inventory or {}
        self.gpu_facts = from_wire.inventory_gpus(self.inventory)
        self.host_facts = from_wire.host_facts(self.inventory)
        if self.inventory.get("disks") and not self.disks:
            self.disks = from_wire.disks(self.inventory["disks"])

    def add_sample(self, sample: dict) -> Sample:
        s = from_wire.sample(sample)
        self.sample, self.latest = sample, s
        self.samples_seen += 1
        self.seqs.append(s.seq)
        if len(self.seqs) > 100000:
            del self.seqs[:50000]
        self.last_sample_at = s.t
        if s.gpus is not None:
            self.gpus = s.gpus
        for i, g in enumerate(self.gpus):
            self.gpu_history.setdefault(i, _history()).append(g.util or 0)
            total = self.gpu_total(i)
            used = g.mem_used
            self.mem_history.setdefault(i, _history()).append(
                100.0 * used / total if used is not None and total else 0)
        if s.loaders is not None:
            self.dl = {st.pid: st for st in s.loaders}
            for st in s.loaders:
                self.dl_history.setdefault(st.pid, _history()).append(st.wait_fraction or 0.0)
            for pid in list(self.dl_history):  # a job that ended takes its history with it
                if pid not in self.dl:
                    del self.dl_history[pid]
        self.host = s.host
        raw_host = sample.get("host")
        if isinstance(raw_host, dict) and "disks" in raw_host and s.host is not None:
            self.disks = s.host.disks
        if s.host is not None and s.host.cpu is not None:
            self.cpu_history.append(s.host.cpu)
        return s

    def add_proc_meta(self, procs: Sequence[Mapping]) -> None:
        for m in from_wire.proc_metas(list(procs)):
            self.proc_meta[m.pid] = m
        if len(self.proc_meta) > 5000:  # long sessions: forget the oldest
            for pid in list(self.proc_meta)[:1000]:
                del self.proc_meta[pid]

    def set_jobs(self, jobs: Optional[dict]) -> None:
        self.jobs = jobs
        self.job_model = from_wire.jobs(jobs)

    def watched(self) -> Tuple[JobWatch, ...]:
        """The daemon's watched jobs (running, finished, crashed, hung, waiting)."""
        return self.job_model.watch

    def watch_for_pane(self, pane: Optional[str]) -> Optional[JobWatch]:
        """The watched job of a tmux pane ("%3"), or None."""
        if not pane:
            return None
        return next((j for j in self.job_model.watch if j.pane == pane), None)

    def take_notify_event(self, msg: Mapping[str, Any]) -> Optional[NotifyEvent]:
        """A pushed notify_event the first time it arrives (reconnects may repeat it); else None."""
        ev = from_wire.notify_event(msg)
        if ev is None or ev.key in self.notify_seen:
            return None
        self.notify_seen.add(ev.key)
        return ev

    def unprotected(self) -> list:
        """The unprotected jobs as the probe sent them (the tmux screen's dicts)."""
        return (self.jobs or {}).get("unprotected") or []

    def tmux_sessions(self) -> list:
        return ((self.jobs or {}).get("tmux") or {}).get("sessions") or []

    def tmux_error(self) -> Optional[str]:
        return ((self.jobs or {}).get("tmux") or {}).get("error")

    def set_connection(self, state: object, detail: str = "") -> None:
        self.conn_state, self.conn_detail = conn_state(state) or ConnState.CONNECTING, detail

    # -- derived -------------------------------------------------------------
    def facts_of(self, index: int) -> GpuFacts:
        return self.gpu_facts[index] if index < len(self.gpu_facts) else GpuFacts(index=index)

    def gpu_total(self, index: int) -> Optional[float]:
        return self.facts_of(index).mem_total

    def gpu_cards(self) -> Tuple[Gpu, ...]:
        """Each GPU with its facts and latest values, for the GPU panel and the fleet."""
        return tuple(Gpu(i, self.facts_of(i), g) for i, g in enumerate(self.gpus))

    def gpu_histories(self) -> List[Sequence[float]]:
        return [self.gpu_history.get(i, ()) for i in range(len(self.gpus))]

    def host_view(self) -> Host:
        """The newest host block with the disks that stand (the host panel)."""
        return dataclasses.replace(self.host or Host(), disks=self.disks)

    def procs_more(self) -> int:
        return self.latest.procs_more if self.latest else 0

    def gpu_model(self) -> Optional[str]:
        """'2× A100-SXM4-80GB' for the header; mixed boxes list each model."""
        from tui.core.text.format import short_gpu_name
        names = [g.name for g in self.gpu_facts]
        if not names:
            return None
        counts = collections.Counter(short_gpu_name(n) for n in names)
        return ", ".join("%d× %s" % (c, n) for n, c in counts.items())

    def no_gpu_reason(self) -> Optional[str]:
        """Why there is no GPU data, or None when there is."""
        if self.latest is not None and self.latest.gpu_error:
            return self.latest.gpu_error
        if self.inventory and not self.gpu_facts:
            return self.inventory.get("reason") or _("no GPU on this box")
        return None

    def data_age(self) -> Optional[float]:
        """Seconds since the newest sample was taken (grows while disconnected)."""
        if self.last_sample_at is None:
            return None
        return max(0.0, self.clock() - self.last_sample_at)

    def proc_rows(self) -> List[ProcRow]:
        """The process table: the newest sample's processes joined with their facts."""
        if not self.latest:
            return []
        now = self.clock()
        unprotected = {j.pid for j in self.job_model.unprotected}
        rows = []
        for p in self.latest.procs:
            meta = self.proc_meta.get(p.pid) if p.local else None
            start = meta.start if meta else None
            host_pid = meta.host_pid if meta else None
            if p.local:
                cmd = short_cmd((meta.cmd if meta else None) or "?")
                if host_pid:
                    cmd += "  (host pid %d)" % host_pid
            else:
                cmd = "(host pid, not visible in this container)"
            rows.append(ProcRow(
                pid=p.pid, gpu=p.gpu, gpu_mem=p.gpu_mem, kind=p.kind or "?",
                cpu=p.cpu, rss=p.rss, local=p.local, host_pid=host_pid,
                unprotected=p.pid in unprotected, user=meta.user if meta else None, cmd=cmd,
                elapsed=(now - start) if start else None, ppid=p.ppid,
            ))
        rows = sort_procs(filter_procs(rows, self.proc_filter), self.sort_key, self.sort_reverse)
        return tree_order(rows) if self.proc_tree else rows

    def cycle_sort(self, visible: Sequence[str] = SORT_KEYS) -> None:
        self.sort_key = next_sort_key(self.sort_key, visible)
        self.sort_reverse = self.sort_key in ("gpu_mem", "cpu", "rss", "elapsed")

    def sort_by(self, key: str) -> None:
        if key == self.sort_key:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_key = key
            self.sort_reverse = key in ("gpu_mem", "cpu", "rss", "elapsed")


def loader_views(state: DashboardState) -> List[LoaderView]:
    """One view per training process: hook stats + outside workers + diagnosis."""
    from tui.core.checks.diagnosis import LoaderFacts, diagnose
    loaders = state.job_model.loaders
    outside: Dict[int, Tuple[Worker, ...]] = {t.pid: t.workers for t in loaders.trainers}
    gpu_of: Dict[int, Optional[int]] = {}
    for p in state.latest.procs if state.latest else ():
        gpu_of.setdefault(p.pid, p.gpu)
    box_cpu = state.host.cpu if state.host else None
    ncpu = state.host_facts.cpu_limit or state.host_facts.ncpu
    views = []
    for pid in sorted(set(state.dl) | set(outside)):
        st = state.dl.get(pid)
        workers = outside.get(pid, ())
        gpu = gpu_of.get(pid)
        util = tuple(list(state.gpu_history.get(gpu, ()))[-30:]) if gpu is not None else ()
        num_workers = st.num_workers if st and st.num_workers is not None else (
            len(workers) if workers else None)
        facts = LoaderFacts(
            wait_fraction=st.wait_fraction if st else None, num_workers=num_workers,
            gpu_util=util, worker_cpu=[w.cpu for w in workers],
            worker_states=[w.state or "?" for w in workers], ncpu=ncpu, box_cpu=box_cpu,
            disk_busy=loaders.disk_busy, io_pressure=loaders.io_pressure,
            pin_memory=st.pin_memory if st else None)
        meta = state.proc_meta.get(pid)
        views.append(LoaderView(pid=pid, stats=st, workers=workers, gpu=gpu,
                                cmd=short_cmd((meta.cmd if meta else None) or ""),
                                wait_history=tuple(state.dl_history.get(pid, ())),
                                gpu_history=util, diagnosis=diagnose(facts)))
    return views
