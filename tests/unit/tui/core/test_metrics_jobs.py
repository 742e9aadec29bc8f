"""The exporter's watched-job gauges (issue 21): gputui_job_progress, gputui_job_eta_seconds and
the gputui_job_state state set, labelled by host, job id and name (box text escaped, not
injected), from the same FleetBox rows the fleet screen shows; no secret in the exposition."""

from prometheus_client import CollectorRegistry, generate_latest

from tui.core.fleet.metrics import export_view, metric_families

from tests.support.fleet_canned import canned_fleet_app
from tests.e2e.test_exporter import of, samples
from tests.support.watch_canned import NOW, TOKEN, watch_list


def exposition(views):
    class One:
        def collect(self):
            return metric_families(views)

    reg = CollectorRegistry()
    reg.register(One())
    return generate_latest(reg).decode()


def test_job_gauges():
    app = canned_fleet_app()
    app.feed()
    box = next(b for b in app.fleet.boxes if b.host == "h100-sweep")
    watch = watch_list(NOW)
    watch[2]["name"] = 'prep"} 1\ngputui_job_progress{job="x"} 9'
    box.on_jobs({"unprotected": [], "watch": watch})
    text = exposition([export_view(box, NOW)])
    m = samples(text)
    assert of(m, "gputui_job_progress", Hostname="h100-sweep", job="tmux:%1") == [0.42]
    assert of(m, "gputui_job_eta_seconds", job="tmux:%1") == [7015.0]
    assert of(m, "gputui_job_progress", job="tmux:%2") == []  # no progress: no sample, not 0
    assert of(m, "gputui_job_state", job="tmux:%2", state="crashed") == [1.0]
    assert of(m, "gputui_job_state", job="tmux:%2", state="running") == [0.0]
    assert of(m, "gputui_job_state", job="pid:4300", state="hung") == [1.0]
    hung = [lab for lab, v in m["gputui_job_state"] if lab["job"] == "pid:4300" and v == 1.0]
    assert [lab["name"] for lab in hung] == [watch[2]["name"]]  # one label value, escaped
    assert not [lab for lab, _v in m["gputui_job_progress"] if lab.get("job") == "x"]
    assert TOKEN not in text
    # a box that is not live exports no job series
    dead = next(b for b in app.fleet.boxes if b.host == "deadbox")
    dead.on_jobs({"watch": watch})
    assert "tmux:%1" not in exposition([export_view(dead, NOW)])
