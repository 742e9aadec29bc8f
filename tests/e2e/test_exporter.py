"""`gputui exporter` through a real sshd: scraped over HTTP, parsed with prometheus-client's
own text parser, names, labels and values checked against the simulator's scenarios."""

import re
import signal
import subprocess
import sys
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from tui.core.fleet.metrics import metric_families

from tests.support.fleet_fixtures import simfleet  # noqa: F401 - the fixture


def scrape(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
        return r.read().decode("utf-8")


def samples(text):
    """{metric name: [(labels, value)]} from the exposition text."""
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def of(metrics, name, **labels):
    return [v for lab, v in metrics.get(name, []) if all(lab.get(k) == w for k, w in labels.items())]


def test_exporter_serves_dcgm_names_and_gputui_gauges(simfleet):  # noqa: F811
    proc = subprocess.Popen([sys.executable, "-m", "tui", "exporter", "--listen", "127.0.0.1:0",
                             "--ssh-config", simfleet.ssh_config],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        port = int(re.search(r"http://127\.0\.0\.1:(\d+)/metrics for 5 boxes", line).group(1))
        deadline = time.time() + 90
        m = {}
        while time.time() < deadline:
            m = samples(scrape(port))
            loaders = of(m, "gputui_dataloader_wait_ratio", Hostname="busy")
            if len(loaders) == 2 and of(m, "gputui_idle_burning", Hostname="idle1") == [1.0]:
                break
            time.sleep(1)
        # DCGM names and labels, per GPU, as NVIDIA's dashboard expects them
        used = {lab["gpu"]: (lab, v) for lab, v in m["DCGM_FI_DEV_FB_USED"] if lab["Hostname"] == "busy"}
        assert set(used) == {"0", "1"}
        for gpu, (lab, v) in used.items():
            assert lab["modelName"] == "NVIDIA A100-SXM4-80GB"
            assert lab["UUID"].startswith("GPU-") and lab["device"] == "nvidia%s" % gpu
            free = of(m, "DCGM_FI_DEV_FB_FREE", Hostname="busy", gpu=gpu)
            assert v + free[0] == 81920
        # the scenario's processes: 61240 and 22118 MiB, plus the context's 500
        assert used["0"][1] == 61740 and used["1"][1] == 22618
        for name in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE",
                     "DCGM_FI_DEV_SM_CLOCK"):
            assert len(of(m, name, Hostname="busy")) == 2, name
            assert len(of(m, name, Hostname="idle1")) == 1, name
        assert of(m, "DCGM_FI_DEV_GPU_UTIL", Hostname="idle1") == [0.0]
        assert 0 < of(m, "DCGM_FI_DEV_POWER_USAGE", Hostname="busy", gpu="0")[0] <= 400
        assert of(m, "DCGM_FI_DEV_SM_CLOCK", Hostname="idle1") == [210.0]
        assert of(m, "DCGM_FI_DEV_GPU_UTIL", Hostname="cpubox") == []  # no GPU, no series
        # gputui's own
        assert of(m, "gputui_probe_up", Hostname="busy") == [1.0]
        assert of(m, "gputui_probe_up", Hostname="deadbox") == [0.0]
        assert of(m, "gputui_rate_per_hour", Hostname="idle1", currency="CNY") == [8.4]
        assert of(m, "gputui_cost", Hostname="gone", state="released") == [12.5]
        assert of(m, "gputui_idle_burning", Hostname="idle1") == [1.0]
        assert of(m, "gputui_idle_burning", Hostname="busy") == [0.0]
        assert of(m, "gputui_gpu_jobs", Hostname="busy") == [2.0]
        assert of(m, "gputui_autostop_armed", Hostname="busy") == [0.0]
        assert sorted(of(m, "gputui_dataloader_wait_ratio", Hostname="busy")) == [0.04, 0.62]
        assert sorted(of(m, "gputui_dataloader_batches_per_second", Hostname="busy")) == [4.1, 11.8]
        assert dict((lab["state"], v) for lab, v in m["gputui_fleet_boxes"]) == {
            "live": 3.0, "unreachable": 1.0, "released": 1.0}
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0, proc.stderr.read()


def test_box_text_in_labels_is_escaped_not_injected():
    """A model name with quotes, a newline and a brace stays one label value."""
    view = {"host": 'evil"box', "state": "live", "currency": "CNY", "loaders": [], "up": 1,
            "gpus": [{"gpu": "0", "UUID": "GPU-x", "pci_bus_id": "", "device": "nvidia0",
                      "modelName": 'A100"} 1\nDCGM_FI_DEV_GPU_UTIL{gpu="9"} 99', "util": 5}]}
    from prometheus_client import CollectorRegistry, generate_latest

    class One:
        def collect(self):
            return metric_families([view])

    reg = CollectorRegistry()
    reg.register(One())
    m = samples(generate_latest(reg).decode())
    assert m["DCGM_FI_DEV_GPU_UTIL"] == [({"gpu": "0", "UUID": "GPU-x", "pci_bus_id": "",
                                           "device": "nvidia0", "modelName": view["gpus"][0]["modelName"],
                                           "Hostname": 'evil"box'}, 5.0)]
