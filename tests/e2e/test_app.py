"""The Textual app, driven headless by Pilot, over real SSH (embedded demo server or sshd)."""

import asyncio
import os
import re

import pytest

from tui.remote import ssh
from tui.remote.demo_box import DemoBox
from tui.remote.session import FAILED, LIVE
from tui.ui.app import GputuiApp
from tui.ui.screens.modals import HelpScreen, HostKeyScreen
from tui.ui.widgets.gpu_panel import GpuPanel
from tui.ui.widgets.process_table import ProcessTable

SIZE = (160, 45)


async def wait_for(pilot, cond, timeout=20.0):
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not cond():
        if loop.time() > end:
            raise AssertionError("condition not met in %.0fs" % timeout)
        await pilot.pause(0.05)


def daemon_pid_of(app):
    return app.box.session.client.hello["pid"] if app.box.session.client else None


def alive(pid):
    try:
        os.kill(pid, 0)
        return open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture
async def demo_box():
    box = await DemoBox().start()
    yield box
    await box.stop()


async def test_demo_dashboard_shows_gpus_processes_and_host(demo_box):
    app = GputuiApp(demo_box.target(), simulate="a100x2", host_label="demo", stop_daemon_on_exit=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.box.state.samples_seen >= 3)
        await pilot.pause(0.2)
        text = str(app.query_one(GpuPanel).render())
        assert text.count("A100-SXM4-80GB") == 2 and "/80.0G" in text and "/400W" in text
        assert "last " in text  # the history graph carries its time label
        table = app.query_one(ProcessTable)
        assert table.row_count == 2
        cmds = [str(table.get_row_at(i)[-1]) for i in range(2)]
        assert any("train.py" in c for c in cmds)
        status = str(app.query_one("#status").render())
        assert "live" in status and "2× A100-SXM4-80GB" in status and "rtt" in status
        host = str(app.query_one("#host").render())
        assert "CPU" in host and "RAM" in host and "Disks" in host
        # The history graph moves: a new sample lands in the card's history.
        before = list(app.box.state.gpu_history[0])
        n = app.box.state.samples_seen
        await wait_for(pilot, lambda: app.box.state.samples_seen > n)
        assert list(app.box.state.gpu_history[0]) != before
        pid = daemon_pid_of(app)
        jobs = [r.pid for r in app.box.state.proc_rows()]
        await pilot.press("q")
    # The demo leaves no process behind.
    await asyncio.sleep(1.0)
    assert not alive(pid) and not any(alive(j) for j in jobs)


async def test_sorting_help_and_palette(demo_box):
    app = GputuiApp(demo_box.target(), simulate="a100x2", stop_daemon_on_exit=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.box.state.samples_seen >= 2)
        assert app.box.state.sort_key == "gpu_mem" and app.box.state.sort_reverse
        table = app.query_one(ProcessTable)
        mems = [app.box.state.proc_rows()[i].gpu_mem for i in range(2)]
        assert mems == sorted(mems, reverse=True)
        await pilot.press("s")
        assert app.box.state.sort_key == "cpu"
        await pilot.press("S")
        assert not app.box.state.sort_reverse
        assert "CPU%▲" in str(table.columns["cpu"].label)  # the arrow fits the 5 columns (issue 23)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        help_text = str(app.screen.query_one("#help-text").render())
        for word in ("Quit", "Sort", "Reconnect", "Help", "palette"):
            assert word in help_text
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert {"Sort", "Reverse", "Reconnect", "Help"} <= set(titles)
        await pilot.press("q")


async def test_cpu_only_box_shows_the_reason(demo_box):
    app = GputuiApp(demo_box.target(), simulate="cpu-only", stop_daemon_on_exit=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.box.state.samples_seen >= 1)
        await pilot.pause(0.1)
        notice = str(app.query_one("#notice").render())
        assert "No GPU data" in notice and "CPU-only" in notice
        assert not app.query_one(GpuPanel).display
        await pilot.press("q")


def untrusted_app(box):
    return GputuiApp(ssh.Target.parse("testbox", ssh_config=box.ssh_config), simulate="idle",
                     remote_dir=box.remote_dir)


async def test_unknown_host_key_dialog_trust(untrusted_sshbox):
    box = untrusted_sshbox
    app = untrusted_app(box)
    async with app.run_test(size=SIZE) as pilot:
        # (composed, not only pushed: the fingerprint is in its last Static)
        await wait_for(pilot, lambda: isinstance(app.screen, HostKeyScreen) and app.screen.query("Static"))
        shown = str(app.screen.query("Static").last().render())
        fingerprint = os.popen("ssh-keygen -lf %s.pub" % box.host_key).read().split()[1]
        assert fingerprint in shown
        await pilot.press("y")
        await wait_for(pilot, lambda: app.box.state.conn_state == LIVE)
        assert "[127.0.0.1]:%d ssh-ed25519" % box.port in box.known_hosts.read_text()
        await pilot.press("q")


async def test_unknown_host_key_dialog_refuse(untrusted_sshbox):
    box = untrusted_sshbox
    app = untrusted_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, HostKeyScreen))
        await pilot.press("n")
        await wait_for(pilot, lambda: app.box.state.conn_state == FAILED)
        await pilot.pause(0.1)
        notice = str(app.query_one("#notice").render())
        assert "not trusted" in notice and "r: try again" in notice
        assert box.known_hosts.read_text() == ""
        assert not os.path.exists(box.remote_dir)
        await pilot.press("q")


async def test_unreachable_box_keeps_retrying_with_a_clear_notice(tmp_path):
    from tests.support.sshd import free_port
    cfg = tmp_path / "cfg"
    cfg.write_text("Host deadbox\n  HostName 127.0.0.1\n  Port %d\n" % free_port())
    app = GputuiApp(ssh.Target.parse("deadbox", ssh_config=str(cfg)))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.box.state.conn_state == "reconnecting")
        # the notice is redrawn on the dashboard's next refresh: a loaded machine showed the
        # previous "connecting" line 0.1 s after the state changed
        await wait_for(pilot, lambda: "Connection refused" in str(app.query_one("#notice").render()), timeout=10)
        notice = str(app.query_one("#notice").render())
        assert re.search(r"Connection refused.*attempt \d+.*r: retry now", notice), notice
        app.dashboard.refresh_status()
        status = str(app.query_one("#status").render())
        assert re.search(r"reconnecting — attempt \d+, next in", status), status
        seen = int(re.search(r"attempt (\d+)", app.box.state.conn_detail).group(1))
        await pilot.press("r")  # retry now: another attempt happens at once
        await wait_for(pilot, lambda: "attempt %d" % (seen + 1) in app.box.state.conn_detail, timeout=10)
        await pilot.press("q")


def app_with(box, scenario, tmp_path, hosts):
    from tui.core.config import Config
    from tui.core.billing.ledger import Ledger
    path = tmp_path / "config.toml"
    import tomli_w
    path.write_text(tomli_w.dumps({"hosts": hosts}))
    return GputuiApp(box.target(), simulate=scenario, stop_daemon_on_exit=True,
                     config=Config.load(str(path)), ledger=Ledger(str(tmp_path / "l.db"))), path


async def test_rate_dialog_sets_the_meter_and_remembers_the_rate(demo_box, tmp_path):
    from tui.core.config import Config
    from tui.ui.screens.modals import RateScreen
    app, path = app_with(demo_box, "idle", tmp_path, {})
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.box.state.samples_seen >= 1)
        assert "No rate set" in str(app.query_one("#billing").render())
        await pilot.press("b")
        await wait_for(pilot, lambda: isinstance(app.screen, RateScreen))
        await pilot.press("3", ".", "6", "0", "enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, RateScreen))
        await pilot.pause(1.2)
        text = str(app.query_one("#billing").render())
        assert "¥3.60/h" in text
        # the idle 4090 costs money for nothing; the meter says so
        assert "all GPUs idle right now" in text
        assert "¥" in str(app.query_one("#status").render())
        await pilot.press("q")
    assert Config.load(str(path)).host(demo_box.target().host).rate == 3.6


async def test_autostop_is_opt_in_per_host(demo_box, tmp_path):
    app, path = app_with(demo_box, "idle", tmp_path, {})
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(pilot, lambda: app.box.state.samples_seen >= 1)
        await pilot.press("a")
        await pilot.pause(0.2)
        texts = [n.message for n in app._notifications]
        assert any("opt-in" in t and "allowed = true" in t and str(path) in t for t in texts)
        await pilot.press("q")


async def test_arming_autostop_shows_the_command_and_fires_on_the_box(demo_box, tmp_path):
    from tui.ui.screens.modals import AutostopScreen
    marker = tmp_path / "released"
    host = demo_box.target().host
    app, _ = app_with(demo_box, "idle", tmp_path, {host: {
        "release_command": "touch %s" % marker, "rate": 1.0,
        "autostop": {"allowed": True, "idle_minutes": 0.05, "grace_seconds": 1}}})
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(pilot, lambda: app.box.state.samples_seen >= 1)
        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, AutostopScreen))
        what = str(app.screen.query_one("#what").render())
        assert "touch %s" % marker in what
        # how to cancel on the box names this probe's own directory (it was always ~/.cache/gputui)
        cancel = (app.box.autostop or {}).get("cancel_command") or ""
        assert "cancel-autostop" in cancel and cancel in what.replace("\n", ""), (cancel, what)
        await pilot.click("#arm")
        await wait_for(pilot, lambda: (app.box.autostop or {}).get("armed") is not None)
        assert "autostop armed" in str(app.query_one("#billing").render())
        await wait_for(pilot, lambda: marker.exists(), timeout=40)  # 3 s idle + 1 s grace; loaded CI
        await wait_for(pilot, lambda: any("Autostop ran" in n.message for n in app._notifications))
        await pilot.press("q")


async def test_budget_warning_rings_and_notifies(demo_box, tmp_path):
    host = demo_box.target().host
    # the demo box started long ago (it is this machine): a tiny budget is already spent
    app, _ = app_with(demo_box, "idle", tmp_path, {host: {"rate": 100.0, "budget_session": 0.01}})
    bells = []
    app.bell = lambda: bells.append(1)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(pilot, lambda: app.box.state.samples_seen >= 1)
        await pilot.pause(1.5)
        texts = [n.message for n in app._notifications]
        assert any("Budget: 100% of ¥0.01" in t for t in texts)
        assert bells
        await pilot.press("q")


async def test_preflight_runs_after_connect_and_on_d(demo_box, tmp_path):
    from tui.ui.screens.doctor import DoctorScreen
    app, _ = app_with(demo_box, "a100x2", tmp_path, {demo_box.target().host: {
        "gpus": 4, "net_check_urls": ["http://127.0.0.1:9/"]}})
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(pilot, lambda: app.box.preflight_checks is not None, timeout=60)
        assert any(n.message.startswith("Preflight:") for n in app._notifications)
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, DoctorScreen))
        await pilot.pause(0.3)
        table = app.screen.query_one("#checks")
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        count = [r for r in rows if r[1] == "GPU count"][0]
        assert count[0] == "✗" and "2 GPUs visible but 4 were rented" in count[2]
        await pilot.press("escape", "q")
