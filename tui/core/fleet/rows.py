"""Every box at once: which hosts make the fleet, one row per box, the forgotten-box alarm.

Plain functions and one plain class (FleetBox, the per-box state fed by a session's
listener calls). The pool that connects lives in tui.remote.fleet_pool; the screen in
tui.ui.fleet_app. Nothing here touches the network or a terminal.
"""

import dataclasses
import re
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from tui.core.text.cells import cell_len, pad  # terminal cells (CJK takes two); the one padder

from tui.core.billing import rates as billing
from tui.core.jobs import lines as job_lines
from tui.core.billing.rates import format_money
from tui.core.billing.clock import RELEASE_ENDINGS, BillingClock
from tui.core.text.boxtext import visible
from tui.core.config import HostConfig
from tui.core.i18n import N_, _, ngettext
from tui.core.model import ConnState
from tui.core.state import DashboardState

if TYPE_CHECKING:
    from tui.core.billing.ledger import Ledger

# Row states, as the fleet shows them. The values are data (JSON, Prometheus labels) and stay
# English; screens and text output show _(state).
LIVE, CONNECTING, RECONNECTING, UNREACHABLE, RELEASED = (
    N_("live"), N_("connecting"), N_("reconnecting"), N_("unreachable"), N_("released"))
SORT_KEYS = (N_("cost"), N_("idle"), N_("name"))
# The daemon's history beyond its 1 h ring is one sample in 30 s: a streak survives gaps that
# long (both ends idle), but not a gap where the daemon was not running at all.
STREAK_MAX_GAP = 65.0
EXIT_OK, EXIT_BURNING = 0, 1


# -- which hosts ------------------------------------------------------------------------
@dataclasses.dataclass
class FleetHost:
    host: str
    released: bool = False  # the ledger's last session of this host has ended
    ledger_row: Optional[dict] = None  # its newest ledger session
    # ended by a release command lately: connected to check that it went down (issue 36);
    # shown released unless it answers on the same boot (then the session opens again)
    verify: bool = False


VERIFY_RELEASE_S = 24 * 3600.0  # how long after a release command the fleet checks the box


def needs_verify(row: Optional[Mapping[str, Any]], now: float) -> bool:
    """A session a release command ended (not one the user ended in the provider console),
    lately: the box might still be up and billing, so the fleet keeps looking."""
    if not row or row.get("end") is None:
        return False
    return (str(row.get("ended_how") or "").startswith(RELEASE_ENDINGS)
            and now - row["end"] < VERIFY_RELEASE_S)


def fleet_hosts(ledger_rows: Iterable[dict], config_hosts: Iterable[str],
                explicit: Optional[Iterable[str]] = None, now: Optional[float] = None) -> List[FleetHost]:
    """The fleet: every host with an open ledger session plus every host in the config
    (or exactly `explicit`), in that order, each once. A host whose newest ledger session
    has ended (released) and has no open one is listed as released and not connected,
    unless a release command ended it lately (needs_verify: then it is connected to check)."""
    now = time.time() if now is None else now
    newest: Dict[str, dict] = {}
    open_hosts: List[str] = []
    for row in sorted(ledger_rows, key=lambda r: (r.get("start") or 0, r.get("id") or 0)):
        newest[row["host"]] = row
        if row.get("end") is None and row["host"] not in open_hosts:
            open_hosts.append(row["host"])
    # a box a release command ended lately stays in the fleet, config or not: it may be up
    checking = [h for h, row in newest.items() if h not in open_hosts and needs_verify(row, now)]
    names = list(explicit) if explicit else open_hosts + checking + [h for h in config_hosts]
    out: List[FleetHost] = []
    seen: Set[str] = set()
    for name in names:
        if name in seen:
            continue
        seen.add(name)
        last = newest.get(name)
        released = name not in open_hosts and last is not None and last.get("end") is not None
        verify = released and needs_verify(last, now)
        out.append(FleetHost(name, released and not verify, last, verify=verify))
    return out


# -- idle streak ------------------------------------------------------------------------
class IdleStreak:
    """How long every GPU has been idle without a break, from a stream of samples.

    Unlike billing.IdleMeter (total idle seconds, for money), this is the current run:
    one busy sample ends it. Samples at or before the last one are ignored (backlog overlap).
    """

    def __init__(self, max_gap: float = STREAK_MAX_GAP) -> None:
        self.max_gap = max_gap
        self.since: Optional[float] = None  # start of the current all-idle run
        self.last_t: Optional[float] = None

    def add(self, t: float, idle: bool) -> None:
        if self.last_t is not None and t <= self.last_t:
            return
        if not idle:
            self.since = None
        elif self.since is None or (self.last_t is not None and t - self.last_t > self.max_gap):
            self.since = t
        self.last_t = t

    def seconds(self) -> Optional[float]:
        """Seconds of the current idle run up to the newest sample; None when not idle."""
        if self.since is None or self.last_t is None:
            return None
        return self.last_t - self.since


# -- one row ----------------------------------------------------------------------------
@dataclasses.dataclass
class GpuBar:
    util: Optional[float]
    mem_used: Optional[float]  # MiB
    mem_total: Optional[float]  # MiB


@dataclasses.dataclass
class BoxRow:
    host: str
    state: str
    reason: str = ""
    gpus: List[GpuBar] = dataclasses.field(default_factory=list)
    gpu_model: Optional[str] = None
    jobs: int = 0  # compute processes on the GPUs
    unprotected: int = 0  # jobs that die with the SSH connection
    idle_for: Optional[float] = None  # seconds every GPU has been idle; None: busy/unknown
    cost: Optional[float] = None
    rate: Optional[float] = None
    idle_cost: Optional[float] = None
    currency: str = "CNY"
    autostop: Optional[str] = None  # "off", "armed", "countdown 1:20"; None unknown
    checklist: Optional[str] = None  # pass / warn / fail from the ledger, if a checklist ran
    burning: bool = False  # billing while idle longer than the alarm threshold
    progress: str = ""  # watched jobs, short: "42% 1h56m", or a crashed/hung job's state
    progress_alarm: bool = False  # a watched job crashed or hangs
    cost_to_finish: Optional[float] = None  # of the job that ends last (money)
    no_proc: bool = False  # the box has no /proc: jobs outside tmux cannot be seen
    # "release command ran at 19:36 but the box is still up and billing" (issue 36)
    release_alarm: Optional[str] = None


def idle_burning(state: str, idle_for: Optional[float], threshold_s: float) -> bool:
    """The forgotten-box verdict: a live box whose GPUs have all been idle for at least
    `threshold_s`. Only live data counts: a box we cannot see is not judged idle."""
    return state == LIVE and idle_for is not None and idle_for >= threshold_s


def row_state(session_state: object, connects: int, failed_once: bool) -> str:
    """The fleet's word for a session state: a box never reached is "unreachable" once an
    attempt failed (it keeps retrying); a box that was live and dropped is "reconnecting"."""
    if session_state == ConnState.LIVE:
        return LIVE
    if session_state in (ConnState.FAILED, ConnState.CLOSED):
        return UNREACHABLE
    if connects:
        return RECONNECTING
    return UNREACHABLE if failed_once else CONNECTING


def released_note(ledger_row: Mapping[str, Any]) -> str:
    """'ended 2026-11-28 23:10 (released)' for a box the ledger says is gone."""
    import datetime
    end = ledger_row.get("end")
    when = datetime.datetime.fromtimestamp(end).strftime("%Y-%m-%d %H:%M") if end else "?"
    how = ledger_row.get("ended_how")
    return _("ended %s") % when + (" (%s)" % _(how) if how else "")


# The session's failure report (tui.remote.session), translated there when it is sent.
RETRY_TEMPLATE = "%s - attempt %d, next in %.0fs"


def retry_report(detail: Optional[str]) -> bool:
    """Whether `detail` is the session's failure report ("<why> - attempt N, next in Ns"), in
    English or in the UI language: a word test ("next in") never matched the Chinese one, so
    an unreachable box stayed "connecting" and `fleet --check` waited out its timeout."""
    for template in {RETRY_TEMPLATE, _(RETRY_TEMPLATE)}:
        tail = re.escape(template.split("%s", 1)[-1])
        tail = tail.replace("%d", r"\d+").replace(re.escape("%.0f"), r"\d+")
        if re.search(tail + "$", detail or ""):
            return True
    return False


def autostop_label(status: object) -> Optional[str]:
    """The probe's autostop status in one word or two."""
    if not isinstance(status, dict):
        return None
    if status.get("grace_left") is not None:
        left = int(status["grace_left"])
        return "countdown %d:%02d" % (left // 60, left % 60)
    return "armed" if status.get("armed") else "off"


def autostop_text(label: Optional[str]) -> Optional[str]:
    """autostop_label() in the UI language ("countdown 1:20" keeps its clock)."""
    if not label:
        return label
    if label.startswith("countdown "):
        return _("countdown %s") % label[len("countdown "):]
    return _(label)


# The autostop words autostop_label() returns, for the catalog (shown through autostop_text).
AUTOSTOP_WORDS = (N_("armed"), N_("off"))
CHECKLIST_WORDS = (N_("pass"), N_("warn"), N_("fail"))
# How the release screen records an ending (ledger data, shown translated when it matches).
ENDINGS = (N_("released in the provider console"), N_("released by autostop"))


def checklist_verdict(ledger_row: Optional[Mapping[str, Any]]) -> Optional[str]:
    """pass / warn / fail of the last shutdown checklist recorded for this session."""
    import json
    raw = (ledger_row or {}).get("checklist")
    if not raw:
        return None
    try:
        doc = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return None
    if isinstance(doc, dict):
        verdict = doc.get("verdict")
        return verdict if verdict in ("pass", "warn", "fail") else None
    return None


def sort_rows(rows: List[BoxRow], key: str = "cost") -> List[BoxRow]:
    """cost and idle: largest first, unknown last; name: alphabetical. Ties by name.
    Released boxes (history, not spending) always come after the others."""
    gone = [r for r in rows if r.state == RELEASED]
    rows = [r for r in rows if r.state != RELEASED]
    if key == "name":
        return sorted(rows, key=lambda r: r.host) + sorted(gone, key=lambda r: r.host)
    attr = {"cost": "cost", "idle": "idle_for"}[key]
    known = sorted((r for r in rows if getattr(r, attr) is not None),
                   key=lambda r: (-getattr(r, attr), r.host))
    return (known + sorted((r for r in rows if getattr(r, attr) is None), key=lambda r: r.host)
            + sorted(gone, key=lambda r: r.host))


def next_sort(key: str) -> str:
    return SORT_KEYS[(SORT_KEYS.index(key) + 1) % len(SORT_KEYS)]


# -- the alarm --------------------------------------------------------------------------
def alarm_text(rows: List[BoxRow]) -> Optional[str]:
    """'2 boxes idle, ¥18.40/h burning'; None when no box burns money idle. Rates in
    different currencies are listed side by side; a box without a known rate is counted
    and said to have none."""
    burning = [r for r in rows if r.burning]
    unreleased = [r for r in rows if r.release_alarm]
    if unreleased:  # a release that did not happen bills all night: said first
        text = ngettext("%d box still up after its release", "%d boxes still up after their release",
                        len(unreleased)) % len(unreleased)
        rest = alarm_text([dataclasses.replace(r, release_alarm=None) for r in rows])
        return text + ("; " + rest if rest else "")
    if not burning:
        return None
    per_currency: Dict[str, float] = {}
    unknown = 0
    for r in burning:
        if r.rate is None:
            unknown += 1
        else:
            per_currency[r.currency] = per_currency.get(r.currency, 0.0) + r.rate
    text = ngettext("%d box idle", "%d boxes idle", len(burning)) % len(burning)
    if per_currency:
        text += _(", %s burning") % " + ".join(
            "%s/h" % format_money(v, c) for c, v in sorted(per_currency.items()))
    if unknown:
        text += _(" (%d with no rate set)") % unknown
    return text


def check_exit_code(rows: List[BoxRow]) -> int:
    """`gputui fleet --check`: 1 when any box burns money idle, else 0."""
    return EXIT_BURNING if any(r.burning or r.release_alarm for r in rows) else EXIT_OK


def new_alarms(rows: List[BoxRow], rung: Set[str]) -> List[str]:
    """Hosts that started burning since the last call: the bell rings once per box. A box
    that stops burning may ring again later."""
    fresh = [r.host for r in rows if r.burning and r.host not in rung]
    rung.difference_update({r.host for r in rows if not r.burning})
    rung.update(fresh)
    return fresh


# -- text -------------------------------------------------------------------------------
def duration_text(seconds: Optional[float]) -> str:
    if seconds is None:
        return "—"
    seconds = int(seconds)
    if seconds < 60:
        return "%ds" % seconds
    if seconds < 3600:
        return "%dm" % (seconds // 60)
    if seconds < 86400:
        return "%dh%02dm" % (seconds // 3600, seconds % 3600 // 60)
    return "%dd%02dh" % (seconds // 86400, seconds % 86400 // 3600)


def gpu_text(gpus: List[GpuBar]) -> str:
    """Compact per-GPU figures: '93% 61/80G'. Bars are drawn by the screen."""
    parts = []
    for g in gpus:
        util = "%3d%%" % g.util if g.util is not None else "  ?%"
        if g.mem_total:
            mem = "%.0f/%.0fG" % ((g.mem_used or 0) / 1024.0, g.mem_total / 1024.0)
        else:
            mem = "?G"
        parts.append("%s %s" % (util, mem))
    return "  ".join(parts) if parts else "—"


def row_dict(r: BoxRow) -> Dict[str, Any]:
    d = dataclasses.asdict(r)
    d["gpus"] = [dataclasses.asdict(g) for g in r.gpus]
    return d


def fleet_json(rows: List[BoxRow], threshold_s: float) -> Dict[str, Any]:
    # JSON is read by scripts: `gputui fleet --json` switches the language to English before
    # anything is built, so "alarm", "state" and "reason" stay English whatever the locale.
    return {"alarm": alarm_text(rows), "idle_alarm_seconds": threshold_s,
            "burning": [r.host for r in rows if r.burning], "boxes": [row_dict(r) for r in rows]}


TABLE_WIDTHS = (18, 12, 22, 4, 4, 7, 10, 9, 10)  # the last column (note) is not padded
TABLE_RIGHT = (False, False, False, True, True, True, True, True, True)


def table_line(cells: Sequence[Any], widths: Sequence[int] = TABLE_WIDTHS) -> str:
    return " ".join(pad(c, w, right) for c, w, right in zip(cells, widths, TABLE_RIGHT)) + \
        "  " + str(cells[-1])


def no_proc_note(row: BoxRow) -> str:
    """A live box without /proc says so: its job count alone would read as "that is all"."""
    return _("no /proc: jobs outside tmux not seen") if row.no_proc else ""


def finish_note(row: BoxRow) -> str:
    """A live box's note: its watched job's progress and what finishing it costs."""
    if row.cost_to_finish is None:
        return row.progress or no_proc_note(row)
    return (row.progress + "  " if row.progress else "") + _("%s to finish") % format_money(
        row.cost_to_finish, row.currency)


def fleet_table(rows: List[BoxRow]) -> str:
    """The plain table `gputui fleet --check` prints (box strings are shown visibly safe by
    the caller). A title wider than its column (Chinese "无保护" is 6 cells) widens it."""
    head = (_("HOST"), _("STATE"), _("GPUS"), _("JOBS"), _("UNPR"), _("IDLE"),
            _("COST"), _("RATE"), _("IDLE COST"), _("NOTE"))
    widths = [max(w, cell_len(t)) for w, t in zip(TABLE_WIDTHS, head)]
    widths[3] = max([widths[3]] + [cell_len(visible(r.progress, limit=14)) for r in rows if r.state == LIVE])
    lines = [table_line(head, widths)]
    for r in rows:
        note = _("IDLE, BILLING") if r.burning else (r.reason if r.state != LIVE else finish_note(r))
        if r.release_alarm:
            note = "⚠ " + r.release_alarm + (", " + note if note else "")
        lines.append(table_line((
            visible(r.host, limit=18), _(r.state), gpu_text(r.gpus)[:22],
            # as the fleet screen's cell: the watched jobs' progress, else the GPU jobs' count
            (visible(r.progress, limit=14) or r.jobs) if r.state == LIVE else "—",
            r.unprotected if r.state == LIVE else "—",
            duration_text(r.idle_for), format_money(r.cost, r.currency),
            ("%s/h" % format_money(r.rate, r.currency)) if r.rate is not None else "—",
            format_money(r.idle_cost, r.currency), visible(note, limit=100)), widths))
    return "\n".join(lines)


# -- the box ----------------------------------------------------------------------------
class FleetBox:
    """One fleet box: the session listener's calls land here (duck-typed like
    tui.remote.session.Listener) and row() turns them into a BoxRow.

    It keeps the same DashboardState and BillingClock the one-box app keeps, so opening
    the box's dashboard from the fleet shows the history gathered so far.
    """

    def __init__(self, fleet_host: FleetHost, host_cfg: HostConfig, ledger: Optional["Ledger"] = None,
                 clock: Callable[[], float] = time.time,
                 on_change: Optional[Callable[["FleetBox"], None]] = None) -> None:
        self.host = fleet_host.host
        self.fleet_host = fleet_host
        self.cfg = host_cfg
        self.clock = clock
        self.state = DashboardState(self.host, clock=clock)
        self.billing = BillingClock(self.host, host_cfg, ledger, clock=clock)
        self.streak = IdleStreak()
        self.autostop: Optional[dict] = None  # the probe's autostop status
        self.preflight_checks: Optional[list] = None  # the last preflight's checks, if one ran
        self.session_state = ConnState.CONNECTING
        self.detail = ""
        self.connects = 0
        self.failed_once = False
        self.reason = ""  # why the last attempt failed, kept while the next one runs
        self.jobs_version = 0
        self.on_change: Callable[[FleetBox], None] = on_change or (lambda box: None)
        self.backlog_in = False  # the daemon's history has arrived since the last connect
        self.autostop_events: List[dict] = []
        self.notice: Optional[str] = None

    # -- listener ------------------------------------------------------------------------
    def on_state(self, state: ConnState, detail: str = "") -> None:
        if state == ConnState.LIVE:
            self.connects += 1
            self.reason = ""
        else:
            self.backlog_in = False
        if state == ConnState.FAILED or (state == ConnState.RECONNECTING and retry_report(detail)):
            # the session's failure report ("<why> - attempt N, next in Ns")
            self.failed_once = True
            self.reason = detail
        self.session_state, self.detail = state, detail
        self.state.set_connection(state, detail)
        self.on_change(self)

    def on_inventory(self, inventory: Dict[str, Any]) -> None:
        self.state.set_inventory(inventory)
        self.billing.on_inventory(inventory)
        self.on_change(self)

    def on_sample(self, sample: Dict[str, Any]) -> None:
        s = self.state.add_sample(sample)
        self.billing.on_sample(sample)
        if not s.gpu_error and s.t is not None:
            self.streak.add(s.t, billing.gpus_idle(list(s.idle_utils), s.compute_procs,
                                                   self.cfg.idle_threshold))
        self.on_change(self)

    def on_proc_meta(self, procs: Sequence[Mapping]) -> None:
        self.state.add_proc_meta(procs)

    def on_latency(self, ms: Optional[float]) -> None:
        self.state.rtt_ms = ms

    def on_autostop(self, status: Optional[dict], event: Optional[dict] = None,
                    events: Optional[Iterable[dict]] = None) -> Tuple[Optional[dict], List[dict]]:
        """-> (the live event, the logged events nobody saw yet): what to tell the user."""
        self.autostop = status
        event, late = self.billing.on_autostop(event, list(events or []))
        self.autostop_events.extend(([event] if event else []) + late)
        del self.autostop_events[:-50]
        self.on_change(self)
        return event, late

    def on_notice(self, text: Optional[str]) -> None:
        self.notice = text  # a fallback the session took (e.g. the terminal transport)

    def on_jobs(self, jobs: Optional[dict]) -> None:
        self.state.set_jobs(jobs)
        self.jobs_version += 1
        self.on_change(self)

    # -- output --------------------------------------------------------------------------
    def threshold_s(self) -> float:
        return 60.0 * self.cfg.idle_alarm_minutes

    def row(self, now: Optional[float] = None) -> BoxRow:
        now = self.clock() if now is None else now
        ledger = self.billing.session or self.fleet_host.ledger_row or {}
        state = row_state(self.session_state, self.connects, self.failed_once)
        # released lately: shown released until it answers on that boot (then it reopens)
        checking = self.fleet_host.verify and self.billing.session is None and state != LIVE
        if self.fleet_host.released or self.billing.ended or checking:  # or autostop released it now
            row = (self.billing.session if self.billing.ended else self.fleet_host.ledger_row) or {}
            return BoxRow(self.host, RELEASED, released_note(row),
                          cost=row.get("cost"), rate=row.get("rate"), idle_cost=row.get("idle_cost"),
                          currency=row.get("currency") or self.cfg.currency,
                          checklist=checklist_verdict(row), gpu_model=row.get("gpu_model"))
        st = self.state
        gpus = [GpuBar(g.live.util, g.live.mem_used, g.mem_total) for g in st.gpu_cards()]
        rows = st.proc_rows()
        has_data = st.latest is not None
        f = self.billing.figures(now) if self.billing.start else None
        idle_for = self.streak.seconds() if has_data else None
        lines = self.job_lines(now) if state == LIVE else []
        progress, kind = job_lines.fleet_cell(lines)
        no_proc = state == LIVE and st.job_model.no_proc
        last = job_lines.last_to_finish(lines)
        return BoxRow(
            self.host, state, reason=(self.reason or self.detail) if state != LIVE else "",
            gpus=gpus, gpu_model=st.gpu_model(),
            # a process on several GPUs (DDP, a context on each) is one job
            jobs=len({r.pid for r in rows if r.kind == "C"}), unprotected=len(st.unprotected()),
            idle_for=idle_for,
            cost=f.cost if f else ledger.get("cost"), rate=f.rate if f else self.cfg.rate,
            idle_cost=f.idle_cost if f else ledger.get("idle_cost"),
            currency=f.currency if f else self.cfg.currency,
            autostop=autostop_label(self.autostop), checklist=checklist_verdict(ledger),
            burning=idle_burning(state, idle_for, self.threshold_s()),
            progress=progress, progress_alarm=kind == "alarm",
            cost_to_finish=last.cost_to_finish if last is not None else None, no_proc=no_proc,
            release_alarm=self.billing.release_alarm)

    def on_notify_event(self, event: Dict[str, Any]) -> None:
        """A notification the daemon sent: kept once (the one-box app toasts it)."""
        self.state.take_notify_event(event)

    def job_lines(self, now: Optional[float] = None) -> List[Any]:
        """The watched jobs with their cost to finish at this box's rate."""
        now = self.clock() if now is None else now
        return job_lines.lines_for(self.state, self.billing.figures(now), now)

    def settled(self) -> bool:
        """Enough is known for a verdict: live with the backlog in, released, or failed."""
        if self.fleet_host.released or self.failed_once or self.session_state == ConnState.FAILED:
            return True
        return self.session_state == ConnState.LIVE and self.backlog_in
