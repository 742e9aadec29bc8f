"""Reports built from a probe snapshot: the `status` document and its text, the doctor
request. Shared by the CLI and the app; no textual, no asyncssh, nothing printed (what a
command says on stderr around a report is the CLI's: `tui.cli.contact`)."""

import dataclasses
import time
from typing import Any, Dict, List, Optional, Sequence

from tui.core.text import format as fmt
from tui.core import from_wire
from tui.core.jobs import clock_lines, lines as job_lines
from tui.core.billing.rates import format_money
from tui.core.text.boxtext import visible
from tui.core.i18n import _, ngettext
from tui.core.jobs.tmux_rows import no_proc_notice
from tui.core.text.cells import columns
from tui.core.config import HostConfig


def procs_from(sample: Dict[str, Any], meta: Optional[Sequence[Dict[str, Any]]]) -> List[Dict[str, Any]]:
    """A sample's process rows as dicts, each with its facts (user, cmd, start) joined in."""
    by_pid = {m["pid"]: m for m in meta or []}
    out = []
    for u in from_wire.proc_usages(sample.get("procs", [])):
        p = {"pid": u.pid, "gpu": u.gpu, "gpu_mem": u.gpu_mem, "cpu": u.cpu, "rss": u.rss,
             "flags": from_wire.proc_flags(u), "local": 1 if u.local else 0, "kind": u.kind,
             "ppid": u.ppid}
        p.update({k: v for k, v in by_pid.get(u.pid, {}).items() if k != "pid"})
        out.append(p)
    return out


def status_json(reply: Dict[str, Any], host: str) -> Dict[str, Any]:
    """The snapshot reply as one JSON document with named fields (not columns)."""
    sample = reply.get("sample") or {}
    procs = procs_from(sample, reply.get("proc_meta"))
    gpus = []
    for static, row in zip(reply["inventory"].get("gpus", []), sample.get("gpus", [])):
        g = dict(static)
        live = dataclasses.asdict(from_wire.gpu_live(row))
        live["throttle_reasons"] = list(live["throttle_reasons"])
        g.update(live)
        gpus.append(g)
    inv = reply["inventory"]
    return {
        "host": host, "time": sample.get("t"), "seq": sample.get("seq"),
        "backend": inv.get("backend"), "driver": inv.get("driver"),
        "cuda_driver": inv.get("cuda_driver"), "no_gpu_reason": inv.get("reason"),
        "gpu_error": sample.get("gpu_error"), "box": inv.get("host"),
        "gpus": gpus, "processes": procs, "processes_not_listed": sample.get("procs_more") or 0,
        "host_metrics": sample.get("host"),
        "tmux": (reply.get("jobs") or {}).get("tmux"),
        "unprotected_jobs": (reply.get("jobs") or {}).get("unprotected"),
        # no /proc on the box (the demo's probe on macOS): an empty job list is not "none"
        "no_proc": from_wire.jobs(reply.get("jobs")).no_proc,
        "autostop": reply.get("autostop"),
        # the last release command of this boot; verified False: the box is still up and
        # billing past the verify window (remote_probe/autostop/release_verify.py), None: not over yet
        "release": (reply.get("autostop") or {}).get("release"),
        # the DataLoader stats per trainer, as the dashboard's panel has them
        "dataloaders": ((reply.get("jobs") or {}).get("loaders") or {}).get("trainers") or [],
        "transport": reply.get("transport"),  # "exec" or "pty" (terminal-only proxies)
        "clocks": clock_lines.clocks_of(reply),  # issue 36: spot notice, balance running out
    }


def jobs_json(reply: Dict[str, Any], bill: Optional[Dict[str, Any]],
              now: Optional[float] = None) -> List[Dict[str, Any]]:
    """The daemon's watched jobs for `status --json`: per job state, progress (fraction),
    eta_seconds and cost_to_finish at the box's rate (`bill`: record_contact's figures)."""
    watch = from_wire.jobs(reply.get("jobs")).watch
    bill = bill or {}
    now = time.time() if now is None else now
    elapsed = bill.get("elapsed_s") if bill.get("start") else None
    lines = job_lines.job_lines(watch, now, bill.get("rate"), bill.get("granularity") or "second",
                                elapsed)
    return [job_lines.job_doc(ln) for ln in lines]


def jobs_text(jobs: List[Dict[str, Any]], currency: Optional[str]) -> List[str]:
    """The watched jobs in `gputui status`: one line each, the evidence of crashed/hung under it."""
    lines = []
    for j in jobs:
        state = from_wire.job_state(j.get("state"))
        head = "%-9s %s" % (state.label if state else "?", visible(j.get("name") or j["id"], limit=40))
        p = j.get("progress") or {}
        if p.get("fraction") is not None:
            head += "  %s %d%%" % (fmt.bar(p["fraction"], 10), int(100 * p["fraction"]))
        if j.get("eta_seconds") is not None:
            head += _("  ETA %s (in %s)") % (_clock(j.get("finish_at")), fmt.duration(j["eta_seconds"]))
        if j.get("cost_to_finish") is not None:
            head += _("  %s to finish") % format_money(j["cost_to_finish"], currency)
        lines.append(head)
        cause = job_lines.cause_text(j.get("cause"))
        if state is not None and state.alarming:
            last = (j.get("evidence") or [""])[-1]
            lines.append("    ↳ " + visible(", ".join(x for x in (cause, last) if x), limit=160))
        if j.get("checkpoint_warning"):
            cp = j.get("checkpoint") or {}
            lines.append("    ⚠ %s: %s (%s)" % (j["checkpoint_warning"], visible(cp.get("path"), limit=80),
                                               fmt.duration(cp.get("age_s"))))
    return lines


def _clock(t: Optional[float]) -> str:
    if t is None:
        return "?"
    import datetime
    try:
        return datetime.datetime.fromtimestamp(t).strftime("%H:%M")
    except (ValueError, OverflowError, OSError):
        return "?"


def autostop_line(status: Optional[Dict[str, Any]]) -> str:
    """Autostop in one line, as the dashboard says it: off, armed (idle / deadline) or
    counting down."""
    status = status or {}
    armed = status.get("armed")
    if not armed:
        return _("autostop off")
    if status.get("grace_left") is not None:
        return _("AUTOSTOP in %ss") % fmt.na(status["grace_left"], "%d")
    parts = []
    if armed.get("idle_seconds") is not None:
        parts.append(_("idle %s (now %s)") % (fmt.duration(armed["idle_seconds"]),
                                             fmt.duration(status.get("idle_for") or 0)))
    if armed.get("deadline"):
        parts.append(_("at %s") % time.strftime("%m-%d %H:%M", time.localtime(armed["deadline"])))
    return _("autostop armed: ") + ", ".join(parts)


def release_line(release: Optional[Dict[str, Any]]) -> Optional[str]:
    """The release command's outcome in one line, loud when the box outlived it; None when no
    release ran this boot. The command is the box's text: shown through visible()."""
    if not isinstance(release, dict) or release.get("ran_at") is None:
        return None
    at = _clock(release.get("ran_at"))
    if release.get("verified") is False:
        return "⚠ " + _("release command ran at %s but the box is still up and billing") % at + \
            " (`%s`, exit %s)" % (visible(release.get("command"), limit=80), visible(release.get("exit")))
    return _("release command ran at %s; checking that the box goes down") % at


def status_text(doc: Dict[str, Any]) -> str:
    """The human snapshot. Every string from the box goes through visible()."""
    lines = []
    gpus = doc["gpus"]
    head = "%s — %s" % (visible(doc["host"]), ngettext("%d GPU", "%d GPUs", len(gpus)) % len(gpus))
    if doc["driver"]:
        head += _(" — driver %s") % visible(doc["driver"]) + (
            ", CUDA %s" % visible(doc["cuda_driver"]) if doc["cuda_driver"] else "")
    head += _(" — backend %s") % visible(doc["backend"])
    lines.append(head)
    bill = doc.get("billing") or {}
    if bill.get("start"):
        provider = bill.get("provider")
        lines.append(_("running %s (since instance start)%s — %s") % (
            fmt.duration(bill["elapsed_s"]),
            (_(", %s so far at %s/h") % (format_money(bill["cost"], bill["currency"]),
                                         format_money(bill["rate"], bill["currency"])))
            if bill.get("rate") is not None else _(", no rate set"),
            _("provider %s") % visible(provider) if provider and provider != "unknown provider"
            else _("provider not detected (set provider in the config)")))
        extra = [bill.get("rate_label") if bill.get("rate") is not None else None,
                 bill.get("balance_text")]  # issue 22: where the price came from, the balance
        if any(extra):
            lines.append("  " + "; ".join(visible(x) for x in extra if x))
    lines.extend(clock_lines.clock_lines(doc.get("clocks") or []))  # loud, near the top
    autostop = doc.get("autostop") or {}
    released = release_line(doc.get("release"))
    if released:
        lines.append(released)
    lines.append(autostop_line(autostop))
    if autostop.get("armed") and autostop.get("cancel_command"):
        lines.append("  " + _("cancel on the box: %s") % visible(autostop["cancel_command"]))
    if doc["no_gpu_reason"]:
        lines.append(_("No GPU: %s") % visible(doc["no_gpu_reason"]))
    if doc["gpu_error"]:
        lines.append(_("GPU data unavailable: %s") % visible(doc["gpu_error"]))
    if gpus:
        lines.append(columns((("GPU", -3), (_("NAME"), -24), (_("UTIL"), 5), (_("VRAM"), 20),
                              (_("TEMP"), 6), (_("POWER"), 12))))
        for g in gpus:
            lines.append(columns((
                (visible(g.get("index")), -3),
                (visible(fmt.short_gpu_name(g.get("name")), limit=24), -24),
                (fmt.pct(g.get("util")), 5),
                ("%s / %s" % (fmt.mib(g.get("mem_used")), fmt.mib(g.get("mem_total"))), 20),
                (fmt.na(g.get("temp"), "%d°C"), 6),
                ("%s/%s" % (fmt.na(g.get("power"), "%dW"), fmt.na(g.get("power_limit"), "%dW")), 12))))
    procs = doc["processes"]
    lines.append("")
    lines.append(ngettext("%d GPU process", "%d GPU processes", len(procs)) % len(procs) +
                 (_(" (and %d more with less GPU memory, not listed)") % doc["processes_not_listed"]
                  if doc.get("processes_not_listed") else ""))
    now = doc.get("time") or time.time()
    for p in sorted(procs, key=lambda p: -(fmt.finite_or_zero(p.get("gpu_mem")))):
        cmd = p.get("cmd") or (_("(host pid, not visible in this container)") if not p["local"] else "?")
        start = p.get("start")
        elapsed = fmt.duration(now - start) if isinstance(start, (int, float)) and start else "n/a"
        lines.append("  " + columns((
            (visible(p["pid"]), -8), (visible(p.get("user") or "-", limit=10), -10), ("GPU", 0),
            (visible(p["gpu"]), -2), (fmt.mib(p.get("gpu_mem")), 10), (elapsed, 8))) +
            "  " + visible(cmd, limit=80))
    for job in doc.get("unprotected_jobs") or []:
        lines.append("⚠ pid %s `%s` %s" % (visible(job["pid"]), visible(job["cmd"], limit=60),
                                          visible(job["reason"])))
    notice = no_proc_notice(bool(doc.get("no_proc")))
    if notice:
        lines.append("⚠ " + notice)
    watched = doc.get("jobs") or []
    if watched:
        lines.append("")
        lines.append(ngettext("%d watched job", "%d watched jobs", len(watched)) % len(watched))
        lines.extend("  " + ln for ln in jobs_text(watched, (doc.get("billing") or {}).get("currency")))
    tmux = doc.get("tmux") or {}
    if tmux.get("error"):
        lines.append("tmux: %s" % visible(tmux["error"]))
    for s in tmux.get("sessions") or []:
        panes = [p for w in s["windows"] for p in w["panes"]]
        lines.append(ngettext("tmux session %-16s %d pane, %s%s", "tmux session %-16s %d panes, %s%s",
                              len(panes)) % (
            visible(s["name"], limit=40), len(panes),
            visible(", ".join(visible(p["command"]) for p in panes), limit=120),
            _(" (attached)") if s["attached"] else ""))
    h = doc.get("host_metrics") or {}
    box = doc.get("box") or {}
    lines.append("")
    lines.append(_("CPU %s of %s cores, iowait %s, load %s; RAM %s / %s") % (
        fmt.pct(h.get("cpu")), visible(box.get("ncpu")), fmt.pct(h.get("iowait")),
        " ".join(fmt.na(x, "%.2f") for x in h.get("load") or []),
        fmt.mib(h.get("mem_used")), fmt.mib(h.get("mem_total"))))
    for d in h.get("disks") or []:
        lines.append(_("disk %-20s %s free of %s") % (visible(d["mount"]), fmt.mib(d["free"]),
                                                  fmt.mib(d["total"])))
    return "\n".join(lines)


def doctor_request(host_cfg: HostConfig, smoke: bool = True) -> Dict[str, Any]:
    req: Dict[str, Any] = {"smoke": smoke}
    if host_cfg.python:
        req["python"] = host_cfg.python
    if host_cfg.net_check_urls is not None:
        req["urls"] = host_cfg.net_check_urls
    return req
