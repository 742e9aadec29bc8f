"""Prometheus exposition of the fleet: GPU metrics under DCGM-exporter's names and labels
(so NVIDIA's Grafana DCGM dashboard works unchanged) plus gputui's own gauges.

The asyncio side publishes plain per-box views once a second (export_view); the HTTP
thread's scrape only reads the last published list, so no live object is shared between
threads. prometheus-client writes the format and escapes label values (box text included).
"""

import threading
from typing import Any, Iterable, List, Optional

from prometheus_client.core import GaugeMetricFamily

from tui.core.fleet.rows import LIVE, FleetBox

# (metric, help, key in the per-GPU view). Units as dcgm-exporter: %, MiB, C, W, MHz.
DCGM_GAUGES = (
    ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", "util"),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).", "mem_util"),
    ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", "fb_used"),
    ("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", "fb_free"),
    ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", "temp"),
    ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", "power"),
    ("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", "clock_sm"),
    ("DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz).", "clock_mem"),
)
DCGM_LABELS = ("gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname")

# (metric, help, key in the box view)
BOX_GAUGES = (
    ("gputui_probe_up", "1 while gputui's probe link to the box is live.", "up"),
    ("gputui_cost", "Money spent on this billing session so far.", "cost"),
    ("gputui_rate_per_hour", "What the box costs per hour.", "rate"),
    ("gputui_idle_cost", "Money paid for idle GPUs in this billing session.", "idle_cost"),
    ("gputui_gpu_idle_seconds", "Seconds every GPU has been idle without a break.", "idle_for"),
    ("gputui_idle_burning", "1 when the box bills while idle longer than the alarm threshold.",
     "burning"),
    ("gputui_gpu_jobs", "Compute processes on the box's GPUs.", "jobs"),
    ("gputui_unprotected_jobs", "GPU jobs that die with the SSH connection (not in tmux/nohup).",
     "unprotected"),
    ("gputui_autostop_armed", "1 when the probe's autostop is armed.", "autostop_armed"),
    ("gputui_release_unverified",
     "1 when a release command ran and the box is still up on that boot (and billing).",
     "release_unverified"),
)
# (metric, help, key in the per-job view): the daemon's watched jobs (issue 21)
JOB_GAUGES = (
    ("gputui_job_progress", "Fraction of a watched job done (0..1), from its output.", "progress"),
    ("gputui_job_eta_seconds", "Seconds until a watched job finishes at its current rate.", "eta"),
)
JOB_STATES = ("running", "finished", "crashed", "hung", "waiting")
LOADER_GAUGES = (
    ("gputui_dataloader_wait_ratio", "Share of time the training loop waits for its DataLoader.",
     "wait_fraction"),
    ("gputui_dataloader_batches_per_second", "Batches per second the DataLoader delivers.",
     "batches_per_s"),
)


def export_view(box: FleetBox, now: Optional[float] = None) -> dict:
    """A plain, immutable-by-convention snapshot of one box for the scrape thread."""
    row = box.row(now)
    live = row.state == LIVE
    gpus: List[dict] = []
    if live:
        st = box.state
        for card in st.gpu_cards():
            f, g = card.facts, card.live
            total, used = f.mem_total, g.mem_used
            gpus.append({
                "gpu": str(f.index), "UUID": f.uuid or "", "pci_bus_id": f.pci_bus_id or "",
                "device": "nvidia%s" % (card.index if f.minor is None else f.minor),
                "modelName": f.name or "",
                "util": g.util, "mem_util": g.mem_util, "fb_used": used,
                "fb_free": (total - used) if total is not None and used is not None else None,
                "temp": g.temp, "power": g.power, "clock_sm": g.clock_sm, "clock_mem": g.clock_mem})
    loaders: List[dict] = []
    if live:
        for pid, stats in sorted(box.state.dl.items()):
            loaders.append({"pid": str(pid), "wait_fraction": stats.wait_fraction,
                            "batches_per_s": stats.batches_per_s})
    jobs: List[dict] = []
    if live:
        for ln in box.job_lines(now):
            j = ln.job
            jobs.append({"job": j.id, "name": j.name, "state": j.state.value if j.state else "unknown",
                         "progress": ln.fraction, "eta": ln.eta})
    armed = (box.autostop or {}).get("armed") if isinstance(box.autostop, dict) else None
    return {
        "jobs_watched": jobs,
        "host": row.host, "state": row.state, "currency": row.currency, "gpus": gpus,
        "loaders": loaders, "up": 1 if live else 0, "cost": row.cost, "rate": row.rate,
        "idle_cost": row.idle_cost, "idle_for": row.idle_for if live else None,
        "burning": 1 if row.burning else 0, "jobs": row.jobs if live else None,
        "unprotected": row.unprotected if live else None,
        "autostop_armed": (1 if armed else 0) if box.autostop is not None else None,
        "release_unverified": 1 if row.release_alarm else 0,  # issue 36
    }


def _number(value: Any) -> Optional[float]:
    """A finite float, or None (nothing is emitted for unknown values)."""
    if value is None:
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if value == value and value not in (float("inf"), float("-inf")) else None


def metric_families(views: List[dict]) -> List[GaugeMetricFamily]:
    """The metric families for a list of box views (also what the tests check)."""
    out: List[GaugeMetricFamily] = []
    for name, help_text, key in DCGM_GAUGES:
        fam = GaugeMetricFamily(name, help_text, labels=DCGM_LABELS)
        for v in views:
            for g in v["gpus"]:
                value = _number(g.get(key))
                if value is not None:
                    fam.add_metric([g["gpu"], g["UUID"], g["pci_bus_id"], g["device"],
                                    g["modelName"], v["host"]], value)
        out.append(fam)
    for name, help_text, key in BOX_GAUGES:
        money = key in ("cost", "rate", "idle_cost")
        labels = ("Hostname", "state") + (("currency",) if money else ())
        fam = GaugeMetricFamily(name, help_text, labels=labels)
        for v in views:
            value = _number(v.get(key))
            if value is not None:
                fam.add_metric([v["host"], v["state"]] + ([v["currency"]] if money else []), value)
        out.append(fam)
    for name, help_text, key in LOADER_GAUGES:
        fam = GaugeMetricFamily(name, help_text, labels=("Hostname", "pid"))
        for v in views:
            for dl in v["loaders"]:
                value = _number(dl.get(key))
                if value is not None:
                    fam.add_metric([v["host"], dl["pid"]], value)
        out.append(fam)
    for name, help_text, key in JOB_GAUGES:
        fam = GaugeMetricFamily(name, help_text, labels=("Hostname", "job", "name"))
        for v in views:
            for j in v.get("jobs_watched", ()):
                value = _number(j.get(key))
                if value is not None:
                    fam.add_metric([v["host"], j["job"], j["name"]], value)
        out.append(fam)
    # one series per job and state, 1 for the state it is in (a state set, as kube-state-metrics)
    states = GaugeMetricFamily("gputui_job_state", "1 for the state a watched job is in.",
                               labels=("Hostname", "job", "name", "state"))
    for v in views:
        for j in v.get("jobs_watched", ()):
            for state in JOB_STATES:
                states.add_metric([v["host"], j["job"], j["name"], state], 1 if j["state"] == state else 0)
    out.append(states)
    boxes = GaugeMetricFamily("gputui_fleet_boxes", "Boxes in the fleet by state.", labels=("state",))
    for state in sorted({v["state"] for v in views}):
        boxes.add_metric([state], sum(1 for v in views if v["state"] == state))
    out.append(boxes)
    return out


class FleetCollector:
    """A prometheus-client custom collector over the last published views."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._views: List[dict] = []

    def publish(self, views: Iterable[dict]) -> None:
        with self._lock:
            self._views = list(views)

    def collect(self) -> List[GaugeMetricFamily]:
        with self._lock:
            views = self._views
        return metric_families(views)

    def describe(self) -> List[GaugeMetricFamily]:
        return []  # no collect() at registration time
