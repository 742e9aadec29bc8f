"""The shutdown checklist: one verdict per hazard, from facts the probe collected and
what is already on the laptop. Plain functions; the Release screen and `gputui
checklist` only display what `build` returns."""

import dataclasses
import os
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from remote_probe.wire.job_kinds import is_kernel, is_service
from tui.core.text import format as fmt
from tui.core import providers
from tui.core.text.boxtext import visible
from tui.core.config import data_dir
from tui.core.i18n import _, ngettext
from tui.core.model import JobState
from tui.core.checks.preflight import FAIL, ORDER, PASS, WARN
from tui.core.state import short_cmd
from tui.core.transfer.download import (
    NAMES_FILE,
    RefusedPath,
    local_path_for,
    local_state,
    renamed,
    safe_component,
)

VRAM_FREE_MIB = 300  # below this a GPU counts as released (driver contexts use a little)
TEMP_WARN_BYTES = 1 << 30
TEMP_MIN_BYTES = 1 << 20  # a leftover holding less is not worth a warning


@dataclasses.dataclass
class Item:
    key: str
    name: str
    verdict: str
    reason: str
    details: List[str] = dataclasses.field(default_factory=list)
    fix: Optional[str] = None  # what the user can press
    waived: bool = False


if TYPE_CHECKING:
    from tui.core.billing.clock import Figures
    from tui.core.model import GpuLive, JobWatch

Proc = Mapping[str, Any]  # a process row as the checklist reads it
Facts = Mapping[str, Any]  # the probe's checklist facts


def download_base(host: str, session_key: object) -> str:
    return os.path.join(data_dir(), "downloads", safe_component(host), safe_component(str(session_key)))


def outside_tmux(watched: Iterable["JobWatch"]) -> Tuple[List["JobWatch"], List["JobWatch"]]:
    """(jobs, kernels): python processes the daemon watches outside tmux (nohup, screen, a
    login shell's `&`) that are still alive. A CPU-only preprocessing run started with nohup
    is no GPU process and no tmux pane, yet releasing the box kills it."""
    jobs: List["JobWatch"] = []
    kernels: List["JobWatch"] = []
    for j in watched:
        if j.kind != "python" or j.pid is None or j.state in (JobState.FINISHED, JobState.CRASHED):
            continue  # GPU processes are listed from the samples; tmux panes from tmux
        if is_service(j.name):  # the daemon leaves them out too; a fact list may be older
            continue
        (kernels if is_kernel(j.name) else jobs).append(j)
    return jobs, kernels


def _outside_line(j: "JobWatch", kernel: bool = False) -> str:
    if kernel:  # listed beside failing jobs, it must not read as one more of them
        return _("pid %s %s (notebook kernel: a warning only)") % (
            visible(j.pid), visible(short_cmd(j.name), limit=120))
    # "waiting" (the watch's word for alive without a GPU) read as "waiting for something" here
    state = (_("no GPU use") if j.state == JobState.WAITING else j.state.label) if j.state else _("state unknown")
    return _("pid %s %s (outside tmux, %s)") % (visible(j.pid), visible(short_cmd(j.name), limit=120), state)


def check_jobs(compute_procs: Iterable[Proc], tmux_sessions: Iterable[Mapping[str, Any]],
               watched: Iterable["JobWatch"] = ()) -> Item:
    compute_procs = list(compute_procs)
    # a job in a tmux pane is counted once, as its pane, not again as its GPU processes
    in_panes = {pid for s in tmux_sessions for w in s["windows"] for pane in w["panes"]
                if pane.get("running") for pid in pane.get("gpu_pids") or ()}
    running = []
    for p in compute_procs:
        if p["pid"] in in_panes:
            continue
        running.append(_("GPU %s: pid %s %s") % (visible(p.get("gpu")), visible(p["pid"]),
                                              visible(p.get("cmd") or "", limit=60)))
    gpu_pids = {p["pid"] for p in compute_procs}
    jobs, kernel_jobs = outside_tmux(j for j in watched if j.pid not in gpu_pids)
    running += [_outside_line(j) for j in jobs]
    kernels = [_outside_line(j, kernel=True) for j in kernel_jobs]
    processes = len(running)  # GPU processes and jobs outside tmux; tmux panes follow
    for s in tmux_sessions:
        for w in s["windows"]:
            for pane in w["panes"]:
                if pane.get("running"):
                    running.append(_("tmux '%s' pane %s: %s") % (visible(s["name"], limit=40), visible(pane["id"]),
                                                              visible(pane["command"], limit=60)))
    # without /proc (the demo's probe on macOS) a pane with a shell in front may still run a
    # script below it: the probe says unknown (None), and that is no pass
    unknown = [_("tmux '%s' pane %s: %s") % (visible(s["name"], limit=40), visible(pane["id"]),
                                           visible(pane["command"], limit=60))
               for s in tmux_sessions for w in s["windows"] for pane in w["panes"]
               if "running" in pane and pane["running"] is None and not pane.get("dead")]
    if not running and kernels:
        return Item("jobs", _("Jobs finished"), WARN, ngettext(
            "%d notebook kernel still up: a cell may still be running",
            "%d notebook kernels still up: a cell may still be running", len(kernels)) % len(kernels),
            kernels, _("look at the notebook, or k: kill the kernel"))
    if not running and unknown:
        return Item("jobs", _("Jobs finished"), WARN, ngettext(
            "cannot check here: %d tmux pane shows a shell, and without /proc what runs below it "
            "cannot be seen", "cannot check here: %d tmux panes show a shell, and without /proc what "
            "runs below them cannot be seen", len(unknown)) % len(unknown), unknown,
            _("t: tmux panel (look at the pane yourself)"))
    if not running:
        return Item("jobs", _("Jobs finished"), PASS,
                    _("no GPU compute process, no job running in tmux or outside it"))
    # only the fixes that apply: `t` for panes, `k` for processes (GPU or outside tmux)
    fixes = ([_("t: tmux panel (Ctrl-C a pane)")] if len(running) > processes else []) + \
        ([_("k: kill the process")] if processes else [])
    return Item("jobs", _("Jobs finished"), FAIL, _("%d still running") % len(running), running + kernels,
                " · ".join(fixes))


def check_vram(gpus: Sequence["GpuLive"], procs: Sequence[Proc]) -> Item:
    held = []
    for i, g in enumerate(gpus):  # tui.core.model.GpuLive, one per GPU
        used = g.mem_used or 0
        if used > VRAM_FREE_MIB:
            owners = [p for p in procs if p.get("gpu") == i]
            who = ", ".join(_("pid %s %s (%s)") % (visible(p["pid"]), visible(p.get("cmd") or "?", limit=40),
                                                fmt.mib(p.get("gpu_mem")))
                            for p in owners) or _("no process listed (a leftover context, or another container)")
            held.append(_("GPU %d: %s in use by %s") % (i, fmt.mib(used), who))
    if not gpus:
        return Item("vram", _("VRAM released"), PASS, _("no GPU seen on this box"))
    if not held:
        return Item("vram", _("VRAM released"), PASS, _("every GPU's memory is free"))
    return Item("vram", _("VRAM released"), FAIL,
                ngettext("%d GPU still holds memory", "%d GPUs still hold memory", len(held)) % len(held),
                held, _("k: kill the holder"))


def artifact_status(files: Iterable[Mapping[str, Any]], base: str) -> List[Dict[str, Any]]:
    """Each artifact with its local state: missing / same / stale / newer local / refused."""
    out = []
    for f in files:
        try:
            local = local_path_for(base, f["path"])
            state = local_state(local, f["size"], f["mtime"])
        except RefusedPath:
            local, state = None, "refused"
        out.append(dict(f, local=local, state=state))
    return out


def check_artifacts(statuses: Sequence[Mapping[str, Any]], truncated: Any = False,
                    corrupt: Iterable[str] = ()) -> Item:
    missing = [s for s in statuses if s["state"] in ("missing", "stale")]
    refused = [s for s in statuses if s["state"] == "refused"]
    newer = [s for s in statuses if s["state"] == "newer local"]
    bad = [s for s in statuses if s["path"] in set(corrupt)]
    details = ["%s %s (%s)" % ({"missing": _("not downloaded:"), "stale": _("changed on the box:")}[s["state"]],
                                visible(s["path"]), fmt.size(s["size"])) for s in missing]
    details += [_("corrupt local copy (sha256 differs): %s") % visible(s["path"]) for s in bad]
    details += [_("refused (unsafe name): %s") % visible(s["path"]) for s in refused]
    details += [_("local copy is newer, kept: %s") % visible(s["local"]) for s in newer]
    details += [_("saved as %s (its name on the box cannot be a local file name; %s maps it back)")
                % (visible(os.path.basename(s["local"])), NAMES_FILE)
                for s in statuses if s["state"] == "same" and renamed(s["path"])]
    if truncated:
        details.append(_("discovery was cut short (many files): set artifact_paths for this host"))
    total = sum(s["size"] for s in missing)
    if missing or bad:
        return Item("artifacts", _("Artifacts downloaded"), FAIL, _("%d of %d not on this laptop (%s)%s") % (
            len(missing) + len(bad), len(statuses), fmt.size(total),
            _("; %d corrupt") % len(bad) if bad else ""), details, _("g: download · v: verify sha256"))
    if refused or truncated:
        return Item("artifacts", _("Artifacts downloaded"), WARN, _("all safe files are here; %s") % (
            _("%d refused") % len(refused) if refused else _("discovery was cut short")), details,
            _("v: verify sha256"))
    return Item("artifacts", _("Artifacts downloaded"), PASS, ngettext(
        "%d file, all on this laptop", "%d files, all on this laptop", len(statuses)) % len(statuses),
        details, _("v: verify sha256"))


def _under(path: str, prefixes: Iterable[str]) -> bool:
    return any(path == p or path.startswith(p.rstrip("/") + "/") or p == "/" for p in prefixes)


def check_ephemeral(statuses: Sequence[Mapping[str, Any]], preset: Optional[providers.Preset]) -> Item:
    if preset is None:
        return Item("ephemeral", _("Nothing on vanishing disks"), PASS, _("provider unknown: no ephemeral paths"))
    persistent = [p for p in preset.persistent_paths if p != "/"]
    at_risk = [s for s in statuses if _under(s["path"], preset.ephemeral_paths)
               and not _under(s["path"], persistent)]
    facts = [visible(line) for line in providers.action_lines(preset)]  # the chosen action (issue 22)
    if not at_risk:
        return Item("ephemeral", _("Nothing on vanishing disks"), PASS, _("no artifact on a path %s wipes at release")
                    % preset.wiper, facts)
    details = ["%s%s" % (visible(s["path"]), _(" (downloaded)") if s["state"] == "same" else _(" (NOT downloaded)"))
               for s in at_risk] + facts
    not_here = [s for s in at_risk if s["state"] != "same"]
    return Item("ephemeral", _("Nothing on vanishing disks"), WARN,
                ngettext("%d artifact on disks %s wipes at release%s",
                         "%d artifacts on disks %s wipes at release%s", len(at_risk))
                % (len(at_risk), preset.wiper,
                   _(" (persistent: %s)") % ", ".join(persistent) if persistent else ""), details,
                _("g: download") if not_here else None)


def check_code(git: Optional[Mapping[str, Any]]) -> Item:
    repos = [r for r in (git or {}).get("repos", []) if r["dirty"] or r["unpushed"]]
    if (git or {}).get("error"):
        return Item("code", _("Code committed and pushed"), WARN, visible((git or {})["error"]))
    # the probe says "unknown" for a repo git could not read (another owner, corrupt):
    # never counted as clean
    unknown = [r for r in (git or {}).get("repos", []) if r.get("state") == "unknown"]
    if unknown and not repos:
        return Item("code", _("Code committed and pushed"), WARN, ngettext(
            "%d repo could not be read", "%d repos could not be read", len(unknown)) % len(unknown),
            ["%s: %s" % (visible(r["path"]), visible(r.get("error") or _("unknown"))) for r in unknown])
    if not repos:
        n = len((git or {}).get("repos", []))
        return Item("code", _("Code committed and pushed"), PASS,
                    ngettext("%d repo clean and pushed", "%d repos clean and pushed", n) % n)
    details = []
    for r in repos:
        if r["dirty"]:
            details.append(ngettext("%s: %d uncommitted change (%s)", "%s: %d uncommitted changes (%s)",
                                    r["dirty"]) % (
                visible(r["path"]), r["dirty"],
                ", ".join(visible(f, limit=80) for f in r["dirty_files"][:3])))
        if r["unpushed"]:
            details.append(ngettext("%s: %d commit no remote has", "%s: %d commits no remote has",
                                    r["unpushed"]) % (visible(r["path"]), r["unpushed"]))
    return Item("code", _("Code committed and pushed"), FAIL, ngettext(
        "%d repo with work not on a remote", "%d repos with work not on a remote", len(repos)) % len(repos),
        details, _("t: open a shell in tmux to commit and push"))


def billed_bytes(t: Mapping[str, Any]) -> int:
    """Storage is billed for the blocks a file holds, not its apparent size (sparse files)."""
    return t["on_disk"] if t.get("on_disk") is not None else t["size"]


def worth_cleaning(t: Mapping[str, Any]) -> bool:
    """A big cache, or a leftover (temp file, core dump) that holds real blocks: a 0 MiB
    sparse file costs nothing and is not worth a warning."""
    billed = billed_bytes(t)
    if t["kind"] in ("temp", "core dump"):
        return billed >= TEMP_MIN_BYTES
    return billed >= TEMP_WARN_BYTES


def check_temp(temp: Optional[Sequence[Mapping[str, Any]]]) -> Item:
    big = [t for t in temp or [] if worth_cleaning(t)]
    if not big:
        return Item("temp", _("Temp files cleaned"), PASS, _("no large caches or leftovers"))
    total = sum(billed_bytes(t) for t in big)
    details = ["%s %s (%s%s)" % (visible(t["kind"]), visible(t["path"]), fmt.size(t["size"]),
                                 _(", %s on disk, sparse") % fmt.size(t["on_disk"])
                                 if t.get("on_disk") is not None and t["on_disk"] < t["size"] / 2 else "")
               for t in big]
    return Item("temp", _("Temp files cleaned"), WARN, _("%s in caches and leftovers billed as storage") %
                fmt.size(total), details, _("x: delete (shows the paths first)"))


def env_frozen_text(reply: Mapping[str, Any]) -> str:
    """Which interpreter an env capture froze, and why that one."""
    python = visible(str(reply.get("python") or "python3"))
    source, pid = reply.get("python_source"), reply.get("python_pid")
    if source == "job" and pid:
        why = _("the running job's interpreter (PID %s)") % pid
    elif source == "config":
        why = _("the python set for this host in the config")
    elif source == "no_proc":
        why = _("the box's python3: without /proc the running job's interpreter cannot be read")
    else:
        why = _("the box's python3: no running job uses python")
    return _("froze %s, %s") % (python, why)


def frozen_python(env_dir: str) -> Optional[str]:
    """The interpreter named in a saved pip-freeze.txt's header line, or None."""
    try:
        with open(os.path.join(env_dir, "pip-freeze.txt"), encoding="utf-8", errors="replace") as f:
            head = f.readline()
    except OSError:
        return None
    if not head.startswith("# ") or " on " not in head:
        return None
    return head[2:].rsplit(" on ", 1)[0].strip() or None


def check_env(env_dir: str) -> Item:
    files = [f for f in ("pip-freeze.txt", "conda-env.yml") if os.path.exists(os.path.join(env_dir, f))]
    if "pip-freeze.txt" in files:
        python = frozen_python(env_dir)
        said = (_("%s frozen, saved in %s") % (visible(python), env_dir) if python
                else _("saved in %s") % env_dir)
        return Item("env", _("Environment captured"), PASS, said, files)
    return Item("env", _("Environment captured"), WARN, _("no pip freeze saved: the box could not be rebuilt"),
                [], _("e: capture pip freeze / conda env"))


def check_protection(autostop: Optional[Mapping[str, Any]]) -> Item:
    armed = (autostop or {}).get("armed")
    return Item("protection", _("Protection"), PASS, _("autostop %s; the probe daemon stops at release") %
                (_("armed (%s)") % armed.get("command") if armed else _("off")))


def check_bill(figures: Optional["Figures"], currency_fmt: Callable[[Optional[float]], str]) -> Item:
    if figures is None or figures.rate is None:
        return Item("bill", _("Bill"), WARN, _("no rate set: the final bill cannot be computed"), [],
                    _("b: enter the rate"))
    details = [_("elapsed %s") % fmt.duration(figures.elapsed), _("cost %s") % currency_fmt(figures.cost),
               _("idle GPUs %s") % currency_fmt(figures.idle_cost)]
    if figures.storage_per_day is not None:
        details.append(_("disk after release %s/day") % currency_fmt(figures.storage_per_day))
    return Item("bill", _("Bill"), PASS, _("%s over %s (idle %s)%s") % (
        currency_fmt(figures.cost), fmt.duration(figures.elapsed), currency_fmt(figures.idle_cost),
        _("; storage %s/day after release") % currency_fmt(figures.storage_per_day)
        if figures.storage_per_day is not None else ""), details)


def verdict(items: Iterable[Item]) -> str:
    live = [i for i in items if not i.waived]
    return max((i.verdict for i in live), key=ORDER.__getitem__, default=PASS)


def release_headline(items: Sequence[Item], released: bool = False) -> Tuple[str, str]:
    """The line over the checklist: (text, verdict). Waived rows are said, not counted as
    passing; after the release no "R releases"."""
    v = verdict(items)
    if released:
        return _("Released: the billing session is closed"), PASS
    waived = sum(1 for i in items if i.waived)
    if v == PASS and waived:
        return ngettext("Safe to release: every check passes or is waived (%d waived; R releases)",
                        "Safe to release: every check passes or is waived (%d waived; R releases)",
                        waived) % waived, v
    return {PASS: _("Safe to release: every check passes (R releases)"),
            WARN: _("Only warnings left: review them, then R releases"),
            FAIL: _("Not safe to release yet: fix or waive (w) the failing checks")}[v], v


def exit_code(items: Iterable[Item]) -> int:
    return ORDER[verdict(items)]


def build(facts: Facts, gpus: Sequence["GpuLive"], procs: Sequence[Proc],
          tmux_sessions: Iterable[Mapping[str, Any]], base: str, preset: Optional[providers.Preset],
          autostop: Optional[Mapping[str, Any]], figures: Optional["Figures"],
          currency_fmt: Callable[[Optional[float]], str], corrupt: Iterable[str] = (),
          waived: Iterable[str] = (),
          watched: Iterable["JobWatch"] = ()) -> Tuple[List[Item], List[Dict[str, Any]]]:
    """Every checklist item, in the order the Release screen shows them."""
    statuses = artifact_status(facts["artifacts"]["files"], base)
    compute = [p for p in procs if p.get("kind", "C") == "C"]
    items = [
        check_jobs(compute, tmux_sessions, watched),
        check_vram(gpus, procs),
        check_artifacts(statuses, facts["artifacts"].get("truncated"), corrupt),
        check_ephemeral(statuses, preset),
        check_code(facts.get("git")),
        check_temp(facts.get("temp")),
        check_env(os.path.join(base, "env")),
        check_protection(autostop),
        check_bill(figures, currency_fmt),
    ]
    for item in items:
        if item.key in waived and item.verdict != PASS:
            item.waived = True
    return items, statuses


def release_blockers(items: Iterable[Item]) -> List[str]:
    """Failing checks nobody waived: release is refused while any is left."""
    return [i.name for i in items if i.verdict == FAIL and not i.waived]
