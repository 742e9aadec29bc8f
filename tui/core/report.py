"""Reports built from a probe snapshot: the `status` document and its text, the ledger
contact, the doctor request. Shared by the CLI and the app; no textual, no asyncssh."""

import sys
import time

from remote_probe import protocol
from tui.core import format as fmt
from tui.core.boxtext import visible
from tui.core.i18n import _, ngettext
from tui.core.layout import cell_len


def columns(cells):
    """One table row of (text, width) cells, padded in terminal columns (CJK headers take
    two per character); a negative width aligns left, as %-Ns does."""
    out = []
    for text, width in cells:
        gap = " " * max(0, abs(width) - cell_len(text))
        out.append(text + gap if width < 0 else gap + text)
    return " ".join(out)


def procs_from(sample, meta):
    """A sample's process rows as dicts, each with its facts (user, cmd, start) joined in."""
    meta = {m["pid"]: m for m in meta or []}
    out = []
    for row in sample.get("procs", []):
        p = protocol.proc_dict(row)
        p.update({k: v for k, v in meta.get(p["pid"], {}).items() if k != "pid"})
        out.append(p)
    return out


def status_json(reply, host):
    """The snapshot reply as one JSON document with named fields (not columns)."""
    sample = reply.get("sample") or {}
    procs = procs_from(sample, reply.get("proc_meta"))
    gpus = []
    for static, row in zip(reply["inventory"].get("gpus", []), sample.get("gpus", [])):
        g = dict(static)
        g.update(protocol.gpu_dict(row))
        g["throttle_reasons"] = protocol.throttle_names(g.get("throttle"))
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
        "autostop": reply.get("autostop"),
        "transport": reply.get("transport"),  # "exec" or "pty" (terminal-only proxies)
    }


def status_text(doc):
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
        from tui.core.billing import format_money
        provider = bill.get("provider")
        lines.append(_("running %s (since instance start)%s — %s") % (
            fmt.duration(bill["elapsed_s"]),
            (_(", %s so far at %s/h") % (format_money(bill["cost"], bill["currency"]),
                                         format_money(bill["rate"], bill["currency"])))
            if bill.get("rate") is not None else _(", no rate set"),
            _("provider %s") % visible(provider) if provider and provider != "unknown provider"
            else _("provider not detected (set provider in the config)")))
    if doc["no_gpu_reason"]:
        lines.append(_("No GPU: %s") % visible(doc["no_gpu_reason"]))
    if doc["gpu_error"]:
        lines.append(_("GPU data unavailable: %s") % visible(doc["gpu_error"]))
    if gpus:
        lines.append(columns((("GPU", -3), (_("NAME"), -24), (_("UTIL"), 5), (_("VRAM"), 20),
                              (_("TEMP"), 6), (_("POWER"), 12))))
        for g in gpus:
            lines.append("%-3s %-24s %5s %20s %6s %12s" % (
                visible(g.get("index")), visible(fmt.short_gpu_name(g.get("name")), limit=24),
                fmt.pct(g.get("util")),
                "%s / %s" % (fmt.mib(g.get("mem_used")), fmt.mib(g.get("mem_total"))),
                fmt.na(g.get("temp"), "%d°C"),
                "%s/%s" % (fmt.na(g.get("power"), "%dW"), fmt.na(g.get("power_limit"), "%dW"))))
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
        lines.append("  %-8s %-10s GPU %-2s %10s %8s  %s" % (
            visible(p["pid"]), visible(p.get("user") or "-", limit=10), visible(p["gpu"]),
            fmt.mib(p.get("gpu_mem")), elapsed, visible(cmd, limit=80)))
    for job in doc.get("unprotected_jobs") or []:
        lines.append("⚠ pid %s `%s` %s" % (visible(job["pid"]), visible(job["cmd"], limit=60),
                                          visible(job["reason"])))
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


def config_for(host):
    """(Config, HostConfig) for a command; every problem in the file is printed once, on
    stderr, whatever the command (after host(): some problems are found per host)."""
    from tui.core.config import Config
    cfg = Config.load()
    host_cfg = cfg.host(host)
    for problem in cfg.problems:
        print(_("gputui: config: %s") % visible(problem), file=sys.stderr)
    return cfg, host_cfg


def record_contact(host, inventory, cfg=None):
    """Any contact with a box opens or continues its billing session in the ledger.
    cfg: the Config the command loaded (through config_for, problems already printed)."""
    from tui.core.billing_clock import BillingClock
    from tui.core.ledger import Ledger, LedgerError
    if cfg is None:
        cfg, _host_cfg = config_for(host)
    try:
        ledger = Ledger()
    except (LedgerError, OSError) as exc:
        print(_("gputui: ledger unavailable: %s") % visible(exc), file=sys.stderr)
        return None
    if ledger.notice:
        print("gputui: %s" % visible(ledger.notice), file=sys.stderr)
    clock = BillingClock(host, cfg.host(host), ledger)
    clock.on_inventory(inventory)
    clock.persist(force=True)
    if clock.problem:
        print("gputui: %s" % visible(clock.problem), file=sys.stderr)
    f = clock.figures()
    ledger.close()
    return {"start": f.start, "elapsed_s": round(f.elapsed), "rate": f.rate, "currency": f.currency,
            "granularity": f.granularity, "cost": f.cost, "provider": f.provider,
            "release_command": f.release_command, "release_action": f.release_action,
            "after_release": f.after_release}


def doctor_request(host_cfg, smoke=True):
    req = {"smoke": smoke}
    if host_cfg.python:
        req["python"] = host_cfg.python
    if host_cfg.net_check_urls is not None:
        req["urls"] = host_cfg.net_check_urls
    return req
