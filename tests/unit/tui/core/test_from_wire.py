"""The builder of the box's model (tui.core.from_wire): probe messages in, model objects out.

A sample recorded from the probe's own sampler (simulator backend, real /proc) goes over the
wire codec and is read into the model; the protocol's own decoders are the oracle. Text from
the box stays data: kept as it came in the model, shown inert by the widgets."""

import io
import time

import pytest
from rich.console import Console

from remote_probe import wire as protocol
from remote_probe.backends.sim import SimBackend, load_scenario
from remote_probe.sampler import Sampler
from tui.core import from_wire
from tui.core.i18n import set_language
from tui.core.layout import GpuPlan
from tui.core.model import ConnState, Gpu, GpuLive, ProcUsage, conn_state
from tui.core.state import DashboardState, loader_views, short_cmd
from tui.ui.widgets.gpu_panel import render_gpus
from tui.ui.widgets.host_panel import render_host
from tui.ui.widgets.loader_panel import render_loaders
from tui.ui.widgets.process_table import row_cells

from tests.support.hostile import NAMES, assert_inert


def over_the_wire(msg):
    """What the laptop receives: encoded by the probe, decoded and cleaned by the client."""
    return protocol.decode_clean(protocol.encode(msg))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """(inventory, sample, proc_meta) as the probe's sampler sends them for the a100x2 box."""
    backend = SimBackend(dict(load_scenario("a100x2"), name="a100x2"),
                         state_dir=str(tmp_path_factory.mktemp("sim")))
    try:
        sampler = Sampler(backend)
        first = dict(sampler.tick(), seq=6)  # disks come every few ticks, the first among them
        time.sleep(0.3)
        sample = dict(sampler.tick(), seq=7)
        inventory = dict(sampler.inventory(), type=protocol.INVENTORY)
        meta = [dict(m, pid=pid) for pid, m in sampler.procs.meta.items()]
    finally:
        backend.close()
    return (over_the_wire(inventory), over_the_wire(sample),
            over_the_wire({"type": protocol.PROC_META, "procs": meta})["procs"], over_the_wire(first))


def test_a_recorded_sample_becomes_the_model_the_protocol_describes(recorded):
    inventory, msg, _meta, first = recorded
    s = from_wire.sample(msg)
    assert s.seq == 7 and s.t == msg["t"] and s.gpu_error is None
    assert len(s.gpus) == 2 and len(s.procs) == 2  # the scenario's two GPUs, one job each
    for live, row in zip(s.gpus, msg["gpus"]):
        want = protocol.gpu_dict(row)
        for field in protocol.GPU_FIELDS:
            assert getattr(live, field) == want[field], field
        assert list(live.throttle_reasons) == protocol.throttle_names(want["throttle"])
    assert 0 < s.gpus[0].util <= 100 and s.gpus[0].mem_used > 0
    for usage, row in zip(s.procs, msg["procs"]):
        want = protocol.proc_dict(row)
        assert (usage.pid, usage.gpu, usage.gpu_mem, usage.cpu, usage.rss) == tuple(
            want[k] for k in ("pid", "gpu", "gpu_mem", "cpu", "rss"))
        assert (usage.local, usage.kind) == (bool(want["local"]), want["kind"])
        assert from_wire.proc_flags(usage) == want["flags"]
    assert [list(s.idle_utils), s.compute_procs] == list(protocol.idle_inputs(msg))
    assert s.host is not None and s.host.mem_total == msg["host"]["mem_total"]
    assert s.host.cores == tuple(msg["host"]["cores"]) and "disks" not in msg["host"]
    disks = from_wire.sample(first).host.disks
    assert disks and [(d.mount, d.total, d.free) for d in disks] == [
        (d["mount"], d["total"], d["free"]) for d in first["host"]["disks"]]
    facts = from_wire.inventory_gpus(inventory)
    assert [f.name for f in facts] == [g["name"] for g in inventory["gpus"]]
    assert [f.mem_total for f in facts] == [g["mem_total"] for g in inventory["gpus"]]
    assert from_wire.host_facts(inventory).ncpu == inventory["host"]["ncpu"]


def test_state_reads_a_sample_once_and_joins_it_with_the_process_facts(recorded, monkeypatch):
    inventory, msg, meta, first = recorded
    st = DashboardState("box", clock=lambda: msg["t"] + 5)
    st.set_inventory(inventory)
    st.add_proc_meta(meta)
    st.add_sample(first)
    st.add_sample(msg)

    def no_more_reading(*args):
        raise AssertionError("a refresh read the wire again")
    for name in ("sample", "proc_usage", "proc_usages", "gpu_live", "host"):
        monkeypatch.setattr(from_wire, name, no_more_reading)
    rows = st.proc_rows()  # a refresh: joins model objects, reads nothing
    assert sorted(r.pid for r in rows) == sorted(p["pid"] for p in meta)
    for r in rows:
        assert r.user == st.proc_meta[r.pid].user
        assert r.cmd == short_cmd(st.proc_meta[r.pid].cmd) and ".py" in r.cmd
        assert r.elapsed == pytest.approx(msg["t"] + 5 - st.proc_meta[r.pid].start)
    cards = st.gpu_cards()
    assert [c.live for c in cards] == list(st.latest.gpus)
    assert cards[0].facts.name == inventory["gpus"][0]["name"] and cards[0].mem_total == 81920
    assert st.host_view().disks and st.latest.host.disks == ()  # the last disk report stands
    assert st.gpu_history[0][-1] == (st.latest.gpus[0].util or 0)


@pytest.mark.parametrize("flags,local,kind", [
    (0, True, "C"),
    (protocol.PROC_HOST_PID, False, "C"),
    (protocol.PROC_GRAPHICS, True, "G"),
    (protocol.PROC_FD_ONLY, True, "?"),
    (protocol.PROC_HOST_PID | protocol.PROC_GRAPHICS, False, "G"),
    (None, True, "C"),  # a flag the schema cleared: a plain local compute process
])
def test_process_flags(flags, local, kind):
    u = from_wire.proc_usage([12, 0, 100, 5, 64, flags])
    assert (u.local, u.kind) == (local, kind)


def test_a_row_without_a_pid_is_no_process():
    assert from_wire.proc_usages([[None, 0, 1, 1, 1, 0], [3, 0, 1, 1, 1, 0]]) == (
        ProcUsage(pid=3, gpu=0, gpu_mem=1, cpu=1, rss=1, local=True, kind="C"),)


def test_a_gpu_error_keeps_the_last_values():
    st = DashboardState("box")
    st.add_sample({"seq": 1, "t": 1.0, "gpus": [protocol.gpu_row({"util": 80})], "procs": []})
    s = st.add_sample({"seq": 2, "t": 2.0, "gpus": [], "procs": [], "gpu_error": "GPU is lost"})
    assert s.gpus is None and st.gpus == (GpuLive(util=80),) and st.no_gpu_reason() == "GPU is lost"
    assert st.add_sample({"seq": 3, "t": 3.0, "gpus": [], "procs": []}).gpus == ()
    assert st.gpus == ()  # no error: the box really has no GPU rows now


@pytest.mark.parametrize("value,read", [
    (0.25, 0.25), (3, 3), ("0.9", None), (True, None), ([1], None), (None, None), ({"x": 1}, None),
])
def test_open_figures_of_the_wrong_type_are_not_available(value, read):
    """The hook's figures pass the schema unchecked (Any): the builder holds them to numbers."""
    st = from_wire.loader_stats({"pid": 5, "wait_fraction": value, "batches_per_s": value})
    assert st.wait_fraction == read and st.batches_per_s == read


def test_hostile_text_stays_data():
    st = DashboardState("box", clock=lambda: 100.0)
    st.set_inventory({"gpus": [{"index": 0, "name": NAMES[0], "mem_total": 1024, "virt_mode": NAMES[1],
                                "mig_devices": [{"name": n} for n in NAMES]}]})
    st.add_proc_meta([{"pid": 10 + i, "user": n, "cmd": n, "start": 50.0} for i, n in enumerate(NAMES)])
    st.set_jobs({"loaders": {"trainers": [{"pid": 10, "workers": [{"pid": 99, "state": NAMES[2]}]}],
                             "orphans": []}})
    st.add_sample({"seq": 1, "t": 99.0, "gpus": [protocol.gpu_row({"util": 50})],
                   "procs": [protocol.proc_row({"pid": 10 + i, "gpu": 0}) for i in range(len(NAMES))],
                   "host": {"cpu": 5, "disks": [{"mount": n} for n in NAMES]},
                   "dl": [{"pid": 10, "num_workers": NAMES[3], "pin_memory": NAMES[4]}]})
    rows = {r.pid: r for r in st.proc_rows()}
    assert [rows[10 + i].user for i in range(len(NAMES))] == NAMES  # kept exactly, as data
    assert st.gpu_facts[0].name == NAMES[0] and [m.name for m in st.gpu_facts[0].mig_devices] == NAMES
    assert [d.mount for d in st.host_view().disks] == NAMES
    views = loader_views(st)
    assert views[0].workers[0].state == NAMES[2]
    assert views[0].stats.num_workers is None and views[0].stats.pin_memory is None  # not numbers
    console = Console(file=io.StringIO(), width=120, record=True, force_terminal=True)
    console.print(render_gpus(st.gpu_cards(), st.gpu_histories(), 110, GpuPlan(lines=3, per_line=1, rows=3)))
    console.print(render_host(st.host_view(), st.host_facts, st.cpu_history, 60))
    console.print(render_loaders(views, (), 110))
    for r in rows.values():
        for cell in row_cells(r):
            console.print(cell)
    assert_inert(console.export_text(styles=False))


def test_conn_state_label_and_style_are_looked_up():
    assert ConnState.STARTING.label == "starting probe" and ConnState.LIVE.style == "bold green"
    assert ConnState.LIVE == "live" and "%s" % ConnState.FAILED == "failed"  # data stays the value
    assert conn_state("reconnecting") is ConnState.RECONNECTING and conn_state("nonsense") is None
    assert [s for s in ConnState if s.busy] == [ConnState.CONNECTING, ConnState.DEPLOYING, ConnState.STARTING]
    set_language("zh")
    try:
        assert ConnState.LIVE.label == "在线" and ConnState.LIVE.value == "live"
    finally:
        set_language("en")


def test_a_gpu_is_its_facts_and_its_values():
    g = Gpu(0, from_wire.gpu_facts({"name": "NVIDIA H200", "mem_total": 143771}, 0),
            from_wire.gpu_live(protocol.gpu_row({"util": 97, "throttle": 0x4 | 0x1})))
    assert g.mem_total == 143771 and g.live.throttle_reasons == ("idle", "power cap")
