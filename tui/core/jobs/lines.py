"""The watched jobs as the laptop shows them: each JobWatch joined with what finishing costs,
when it ends on the clock and whether its checkpoint needs a warning. Plain functions; the
dashboard's jobs panel, the tmux panel, the fleet row, `gputui status` and the exporter all
read the JobLine built here, so they can never disagree."""

import dataclasses
from typing import Any, Dict, List, Optional, Sequence, Tuple

from tui.core.billing import rates as billing
from tui.core.notify import messages as notify_messages
from tui.core.i18n import N_, _
from tui.core.model import JobCheckpoint, JobState, JobWatch

def cause_text(cause: Optional[str]) -> Optional[str]:
    """Why the box judged a job crashed / hung / finished (the wire's "cause"), in the user's
    language (the names the box's notifications use); an unknown one as the box named it."""
    if cause is None:
        return None
    return notify_messages.causes().get(cause, cause)


@dataclasses.dataclass(frozen=True)
class JobLine:
    """One watched job with the laptop's figures."""

    job: JobWatch
    eta: Optional[float]  # seconds left from now (None: no ETA, or the job is not running)
    cost_to_finish: Optional[float]  # money; None without a rate or an ETA
    finish_at: Optional[float]  # epoch the job should end (now + ETA)
    checkpoint_warning: Optional[str]  # translated, or None

    @property
    def fraction(self) -> Optional[float]:
        return self.job.progress.fraction if self.job.progress else None


def checkpoint_warning(cp: Optional[JobCheckpoint], state: Optional[JobState]) -> Optional[str]:
    """A warning while the job runs: its newest checkpoint is stale or on a wiped disk."""
    if cp is None or state not in (JobState.RUNNING, JobState.HUNG, JobState.WAITING):
        return None
    if cp.wiped_disk:
        return _("checkpoint on a disk the provider wipes at release")
    if cp.stale:
        return _("no new checkpoint for a long time")
    return None


def job_line(job: JobWatch, now: float, rate: Optional[float], granularity: str,
             elapsed: Optional[float]) -> JobLine:
    """`elapsed`: billed seconds so far (None when the session start is unknown). The ETA
    counts from the reading's time ("at", a few seconds old): what is left is counted from now."""
    # a job off the GPU ("waiting": data prep, a CPU stage) that reports progress still ends then
    eta = remaining(job, now) if job.state in (JobState.RUNNING, JobState.WAITING, None) else None
    return JobLine(job=job, eta=eta,
                   cost_to_finish=billing.cost_to_finish(eta, rate, granularity, elapsed),
                   finish_at=None if eta is None else now + eta,
                   checkpoint_warning=checkpoint_warning(job.checkpoint, job.state))


def remaining(job: JobWatch, now: float) -> Optional[float]:
    """Seconds left from `now`: the box's ETA less the reading's age (never below 0)."""
    p = job.progress
    if p is None or p.eta_seconds is None:
        return None
    age = max(0.0, now - p.at) if p.at is not None else 0.0
    return max(0.0, p.eta_seconds - age)


_ORDER = {JobState.CRASHED: 0, JobState.HUNG: 1, JobState.RUNNING: 2, JobState.WAITING: 3,
          JobState.FINISHED: 4}


def job_lines(jobs: Sequence[JobWatch], now: float, rate: Optional[float], granularity: str,
              elapsed: Optional[float]) -> List[JobLine]:
    """Every watched job, crashed and hung first, then running ones by the nearest ETA."""
    lines = [job_line(j, now, rate, granularity, elapsed) for j in jobs]
    far = float("inf")
    lines.sort(key=lambda ln: (_ORDER.get(ln.job.state, 5) if ln.job.state else 5,
                               ln.eta if ln.eta is not None else far,
                               ln.job.id))
    return lines


def lines_for(state: Any, figures: Any, now: float) -> List[JobLine]:
    """The job lines of a DashboardState with a BillingClock's Figures (the app, the fleet)."""
    return job_lines(state.job_model.watch, now, figures.rate, figures.granularity,
                     figures.elapsed if figures.start else None)


def fleet_cell(lines: Sequence[JobLine]) -> Tuple[str, str]:
    """The fleet's jobs column, short: (text, kind) with kind "alarm", "run" or "".

    A crashed or hung job is what the user must see first; else the running job that ends
    last (the box bills until then): '42% 1h55m'."""
    for ln in lines:
        if ln.job.state is not None and ln.job.state.alarming:
            return ln.job.state.label, "alarm"
    last = last_to_finish(lines)
    if last is None:
        return "", ""
    text = "%d%%" % int(100 * (last.fraction or 0.0))
    if last.eta is not None:
        text += " " + short_duration(last.eta)
    return text, "run"


def last_to_finish(lines: Sequence[JobLine]) -> Optional[JobLine]:
    """The running job with progress that ends last: the box bills at least until then."""
    running = [ln for ln in lines if ln.job.state in (JobState.RUNNING, JobState.WAITING)
               and ln.fraction is not None]
    return max(running, key=lambda ln: ln.eta if ln.eta is not None else -1) if running else None


def short_duration(seconds: float) -> str:
    """'45s', '12m', '1h55m', '3d04h': the fewest cells that still tell an ETA."""
    s = int(max(0, seconds))
    if s < 60:
        return "%ds" % s
    if s < 3600:
        return "%dm" % (s // 60)
    if s < 86400:
        return "%dh%02dm" % (s // 3600, s % 3600 // 60)
    return "%dd%02dh" % (s // 86400, s % 86400 // 3600)


def job_doc(ln: JobLine) -> Dict[str, Any]:
    """One job for `status --json` and scripts: names as the contract, English values."""
    j, p, cp = ln.job, ln.job.progress, ln.job.checkpoint
    return {
        "id": j.id, "kind": j.kind, "name": j.name, "pid": j.pid, "pane": j.pane,
        "state": j.state.value if j.state else None, "cause": j.cause,
        "evidence": list(j.evidence), "since": j.since, "exit": j.exit,
        "progress": None if p is None else {
            "fraction": p.fraction, "done": p.done, "total": p.total, "unit": p.unit,
            "rate": p.rate, "eta_seconds": p.eta_seconds, "source": p.source, "at": p.at},
        "eta_seconds": None if ln.eta is None else round(ln.eta, 1), "finish_at": ln.finish_at,
        "cost_to_finish": None if ln.cost_to_finish is None else round(ln.cost_to_finish, 4),
        "checkpoint": None if cp is None else {
            "path": cp.path, "age_s": cp.age_s, "stale": cp.stale, "wiped_disk": cp.wiped_disk},
        "checkpoint_warning": ln.checkpoint_warning,
        "stuck": [{"gpu": g, "pid": pid, "rank": rank, "how": how} for g, pid, rank, how in j.stuck],
    }


# Which idle rule the probe's autostop judges by (its status "rule"), in words.
IDLE_RULES = {"utilization": N_("idle rule: GPU utilization"),
              "no_compute": N_("idle rule: no compute process (utilization not reported)"),
              "no_gpu": N_("idle rule: no GPU, never idle")}


def autostop_rule(status: Any, jobs: Sequence[JobWatch] = ()) -> Optional[str]:
    """'idle rule: …; releases when train ends' for an autostop status; None when it says
    neither (an older probe)."""
    if not isinstance(status, dict):
        return None
    parts = []
    rule = status.get("rule")
    if isinstance(rule, str):
        parts.append(_(IDLE_RULES[rule]) if rule in IDLE_RULES else _("idle rule: %s") % rule)
    armed = status.get("armed")
    armed = armed if isinstance(armed, dict) else {}
    job_id = status.get("when_job_done") or armed.get("when_job_done")
    if isinstance(job_id, str) and job_id:
        name = next((j.name for j in jobs if j.id == job_id and j.name), job_id)
        parts.append(_("releases when %s ends") % name)
    return "; ".join(parts) or None
