"""One typed model of the box: what the screens show, as frozen dataclasses.

Built once when a message arrives (tui.core.from_wire reads the wire; DashboardState keeps
the result); widgets, the fleet rows, the exporter and the status report read these objects
and never a wire row or dict. Values are what the probe sent after its schema cleaned them:
None means "not available" and every reader handles it.
"""

import dataclasses
import enum
from typing import Dict, Optional, Tuple

# The connection's states live in their own module (the session imports them at start-up,
# before this one's dataclasses are needed); re-exported for everyone who reads the model.
from tui.core.session.conn_state import ConnState, conn_state  # noqa: F401
from tui.core.checks.diagnosis import Diagnosis
from tui.core.i18n import N_, _


# -- GPUs ---------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class MigSlice:
    name: Optional[str]
    mem_total: Optional[float]  # MiB


@dataclasses.dataclass(frozen=True)
class GpuFacts:
    """What does not change while the box runs (the inventory)."""

    index: int
    name: Optional[str] = None
    uuid: Optional[str] = None
    pci_bus_id: Optional[str] = None
    minor: Optional[int] = None
    mem_total: Optional[float] = None  # MiB
    power_limit: Optional[float] = None  # W
    clock_sm_max: Optional[float] = None
    clock_mem_max: Optional[float] = None
    mig_mode: Optional[int] = None
    virt_mode: Optional[str] = None
    mig_devices: Tuple[MigSlice, ...] = ()


@dataclasses.dataclass(frozen=True)
class GpuLive:
    """One GPU's values in one sample. Field names are the wire's GPU columns."""

    util: Optional[float] = None  # %
    mem_util: Optional[float] = None  # memory controller %
    mem_used: Optional[float] = None  # MiB
    temp: Optional[float] = None  # °C
    power: Optional[float] = None  # W
    clock_sm: Optional[float] = None  # MHz
    clock_mem: Optional[float] = None  # MHz
    pstate: Optional[int] = None
    fan: Optional[float] = None  # %
    throttle: Optional[int] = None  # NVML reason mask
    ecc_errors: Optional[int] = None
    throttle_reasons: Tuple[str, ...] = ()  # the mask's names ("power cap", ...)


@dataclasses.dataclass(frozen=True)
class Gpu:
    """A GPU as a panel shows it: its facts joined with its latest values."""

    index: int
    facts: GpuFacts
    live: GpuLive

    @property
    def mem_total(self) -> Optional[float]:
        return self.facts.mem_total


# -- processes ----------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class ProcUsage:
    """One GPU process in one sample (a process on two GPUs has two)."""

    pid: int
    gpu: Optional[int]
    gpu_mem: Optional[float]  # MiB; None when the driver hides it
    cpu: Optional[float]  # % of one core
    rss: Optional[float]  # MiB
    local: bool  # visible in this container's /proc
    kind: str  # "C" compute, "G" graphics, "?" found through an open /dev/nvidia*
    ppid: Optional[int] = None  # parent in this /proc (the tree view); None: unknown


@dataclasses.dataclass(frozen=True)
class ProcMeta:
    """What cannot change while a process lives (sent once in proc_meta)."""

    pid: int
    user: Optional[str] = None
    cmd: Optional[str] = None
    start: Optional[float] = None  # epoch
    host_pid: Optional[int] = None


@dataclasses.dataclass(frozen=True)
class ProcRow:
    """A row of the process table: usage joined with the process's facts."""

    pid: int
    gpu: Optional[int]
    gpu_mem: Optional[float]
    kind: str
    cpu: Optional[float]
    rss: Optional[float]
    local: bool
    host_pid: Optional[int]
    unprotected: bool
    user: Optional[str]
    cmd: str
    elapsed: Optional[float]
    ppid: Optional[int] = None
    tree: str = ""  # the tree view's branch drawn before the command ("├─ "), else ""


# -- the host -----------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Disk:
    mount: Optional[str] = None
    fstype: Optional[str] = None
    total: Optional[float] = None  # MiB
    used: Optional[float] = None
    free: Optional[float] = None


@dataclasses.dataclass(frozen=True)
class HostFacts:
    """The box's static facts (inventory "host")."""

    ncpu: Optional[int] = None
    cpu_limit: Optional[float] = None  # cores the cgroup may use
    hostname: Optional[str] = None
    boot_time: Optional[float] = None
    instance_start: Optional[float] = None


@dataclasses.dataclass(frozen=True)
class Host:
    """The box's CPU, memory, disks and network in one sample."""

    cpu: Optional[float] = None  # % of all cores
    cores: Tuple[Optional[float], ...] = ()
    iowait: Optional[float] = None
    load: Tuple[Optional[float], ...] = ()
    mem_total: Optional[float] = None  # MiB
    mem_used: Optional[float] = None
    swap_total: Optional[float] = None
    swap_used: Optional[float] = None
    disks: Tuple[Disk, ...] = ()
    rx_bps: Optional[float] = None
    tx_bps: Optional[float] = None


# -- dataloaders and jobs -----------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class LoaderStats:
    """The dataloader hook's figures for one training process."""

    pid: int
    batches_per_s: Optional[float] = None
    samples_per_s: Optional[float] = None
    wait_fraction: Optional[float] = None  # 0..1 of the time spent waiting for a batch
    wait_p50_ms: Optional[float] = None
    wait_p95_ms: Optional[float] = None
    wait_max_ms: Optional[float] = None
    num_workers: Optional[int] = None
    pin_memory: Optional[bool] = None
    prefetch_factor: Optional[int] = None
    persistent_workers: Optional[bool] = None


@dataclasses.dataclass(frozen=True)
class Worker:
    """A DataLoader worker process (or an orphaned one)."""

    pid: int
    cpu: Optional[float] = None
    rss: Optional[float] = None
    state: Optional[str] = None  # ps state letter


@dataclasses.dataclass(frozen=True)
class Trainer:
    pid: int
    workers: Tuple[Worker, ...] = ()


@dataclasses.dataclass(frozen=True)
class UnprotectedJob:
    """A GPU job that dies with the ssh session (not in tmux, not nohup)."""

    pid: int
    cmd: Optional[str] = None
    gpu: Optional[bool] = None
    reason: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Loaders:
    trainers: Tuple[Trainer, ...] = ()
    orphans: Tuple[Worker, ...] = ()
    disk_busy: Optional[float] = None
    io_pressure: Optional[float] = None  # PSI io some avg10, %


@dataclasses.dataclass(frozen=True)
class Jobs:
    loaders: Loaders = dataclasses.field(default_factory=Loaders)
    unprotected: Tuple[UnprotectedJob, ...] = ()
    tmux_error: Optional[str] = None
    watch: Tuple["JobWatch", ...] = ()  # the daemon's watched jobs (issue 21)
    # the box has no /proc (the demo's probe on macOS): jobs outside tmux, their protection
    # and dataloader workers cannot be seen; tmux panes are judged from tmux's state only
    no_proc: bool = False
    # clocks that delete data or stop the job (a spot notice, the balance at zero), soonest first
    clocks: Tuple["Clock", ...] = ()


@dataclasses.dataclass(frozen=True)
class Clock:
    """A clock from the box (remote_probe/watch/clocks.py): what, from where, and when it strikes."""

    kind: str
    at: float
    what: str = ""
    source: str = ""
    action: str = ""


@dataclasses.dataclass(frozen=True)
class Sample:
    """One sample, read once on arrival."""

    seq: int
    t: Optional[float]
    # None: the sample carried no GPU rows because reading them failed (gpu_error)
    gpus: Optional[Tuple[GpuLive, ...]]
    procs: Tuple[ProcUsage, ...]
    procs_more: int  # processes the probe counted but did not list
    host: Optional[Host]
    gpu_error: Optional[str]
    # None: the sample said nothing about dataloaders (the last report stands)
    loaders: Optional[Tuple[LoaderStats, ...]]
    idle_utils: Tuple[Optional[float], ...]  # what the idle rule is judged on
    compute_procs: int


@dataclasses.dataclass(frozen=True)
class LoaderView:
    """One training process in the dataloader panel."""

    pid: int
    stats: Optional[LoaderStats]
    workers: Tuple[Worker, ...]
    gpu: Optional[int]
    cmd: str
    wait_history: Tuple[float, ...]
    gpu_history: Tuple[float, ...]
    diagnosis: Diagnosis


# -- watched jobs (the daemon's judgement of each job: issue 21) ---------------------------
class JobState(str, enum.Enum):
    """What the box says a job is doing. A str, so JSON and exporter labels carry the value;
    screens show `label` (translated) and `style`."""

    RUNNING = "running"
    FINISHED = "finished"
    CRASHED = "crashed"
    HUNG = "hung"
    WAITING = "waiting"

    def __str__(self) -> str:
        return str(self.value)

    @property
    def label(self) -> str:
        return _(_JOB_LABELS[self])

    @property
    def style(self) -> str:
        return _JOB_STYLES[self]

    @property
    def alarming(self) -> bool:
        """Crashed and hung: shown with their evidence, first in every list."""
        return self in (JobState.CRASHED, JobState.HUNG)


_JOB_LABELS: Dict[JobState, str] = {
    JobState.RUNNING: N_("running"), JobState.FINISHED: N_("finished"),
    JobState.CRASHED: N_("crashed"), JobState.HUNG: N_("hung"),
    # the box's "waiting" is one verdict only: alive, no GPU in use (data prep, a CPU stage, a
    # job that never found CUDA); "waiting" read as stuck to users watching it count epochs
    JobState.WAITING: N_("off GPU"),
}
_JOB_STYLES: Dict[JobState, str] = {
    JobState.RUNNING: "green", JobState.FINISHED: "cyan", JobState.CRASHED: "bold red",
    JobState.HUNG: "bold magenta", JobState.WAITING: "yellow",
}


@dataclasses.dataclass(frozen=True)
class JobProgress:
    """How far a job is, as the box parsed it from the job's output (tqdm, HF, Lightning,
    "step N/M")."""

    fraction: Optional[float] = None  # 0..1
    done: Optional[float] = None
    total: Optional[float] = None
    unit: Optional[str] = None
    rate: Optional[float] = None  # units per second
    eta_seconds: Optional[float] = None  # counted from `at`
    source: Optional[str] = None
    at: Optional[float] = None  # epoch (the box's clock) of the reading


@dataclasses.dataclass(frozen=True)
class JobCheckpoint:
    """The newest checkpoint-like file the job wrote."""

    path: str
    age_s: Optional[float] = None
    stale: bool = False  # none newer than the configured age while the job runs
    wiped_disk: bool = False  # on a disk the provider wipes at release


@dataclasses.dataclass(frozen=True)
class JobWatch:
    """One job the daemon watches: a tmux pane, a GPU process or a long-running python."""

    id: str  # "tmux:%3" or "pid:1234": stable per job
    kind: Optional[str] = None  # "tmux" | "gpu" | "python"
    name: str = ""
    pid: Optional[int] = None
    pane: Optional[str] = None
    state: Optional[JobState] = None  # None: a state this gputui does not know
    cause: Optional[str] = None  # "cuda_oom", "nccl_timeout", "traceback", ...
    evidence: Tuple[str, ...] = ()
    since: Optional[float] = None  # epoch the state began
    exit: Optional[int] = None
    progress: Optional[JobProgress] = None
    checkpoint: Optional[JobCheckpoint] = None
    # hung: the stuck GPUs / ranks, each (gpu, pid, rank, how: "spinning" | "idle")
    stuck: Tuple[Tuple[int, Optional[int], Optional[int], str], ...] = ()

    @property
    def eta_seconds(self) -> Optional[float]:
        return self.progress.eta_seconds if self.progress is not None else None


@dataclasses.dataclass(frozen=True)
class NotifyEvent:
    """A notification the daemon queued (pushed so an open app can toast it once)."""

    kind: str
    job: Optional[str]
    title: str
    body: str
    t: Optional[float]
    sent: Optional[bool]

    @property
    def key(self) -> Tuple[str, Optional[str], Optional[float]]:
        return (self.kind, self.job, self.t)
