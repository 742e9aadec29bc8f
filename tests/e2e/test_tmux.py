"""tmux jobs, protection and reconnects end to end: real sshd, real tmux, the real app."""

import asyncio
import json
import os
import subprocess
import sys

import pytest

from remote_probe import wire
from tui.core.config import Config
from tui.core.billing.ledger import Ledger
from tui.remote import session as session_mod
from tui.remote import ssh
from tui.ui.app import GputuiApp
from tui.ui.screens.tmux_screen import JobScreen, TmuxScreen

from tests.e2e.test_app import SIZE, wait_for

pytestmark = pytest.mark.timeout(300)


def target(box):
    return ssh.Target.parse("testbox", ssh_config=box.ssh_config)


def tmux(box, *args):
    from tests.support.sshd import box_tmux_env
    return subprocess.run(["tmux", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=box_tmux_env(box))


def make_app(box, scenario, tmp_path):
    return GputuiApp(target(box), simulate=scenario, remote_dir=box.remote_dir,
                     config=Config.load(str(tmp_path / "none.toml")),
                     ledger=Ledger(str(tmp_path / "l.db")))


async def start_job_like_a_user(app, pilot, name, cwd, command):
    """t, n, fill the form, OK: gputui's new-job action, as a user drives it."""
    await wait_for(pilot, lambda: app.box.state.samples_seen >= 1)
    await pilot.press("t")
    await wait_for(pilot, lambda: isinstance(app.screen, TmuxScreen))
    await pilot.press("n")
    await wait_for(pilot, lambda: isinstance(app.screen, JobScreen))
    app.screen.query_one("#name").value = name
    app.screen.query_one("#cwd").value = cwd
    app.screen.query_one("#command").value = command
    await pilot.click("#ok")


async def test_job_survives_ten_ssh_drops_and_the_samples_have_no_gap(sshbox, tmp_path):
    app = make_app(sshbox, "a100x2", tmp_path)
    seqs = []
    async with app.run_test(size=SIZE) as pilot:
        await start_job_like_a_user(app, pilot, "train run ☃", str(tmp_path),
                                    "python3 -c 'import time\nwhile True: print(time.time(), flush=True); time.sleep(0.5)'")
        await wait_for(pilot, lambda: any(s["name"] == "train run ☃" for s in app.box.state.tmux_sessions()))
        job_pid = app.box.state.tmux_sessions()[0]["windows"][0]["panes"][0]["pid"]
        start_seq = app.box.state.seqs[-1]
        drops = 0
        for _ in range(10):
            await wait_for(pilot, lambda: app.box.session.state == session_mod.LIVE)
            n = app.box.state.samples_seen
            await wait_for(pilot, lambda: app.box.state.samples_seen > n)
            for pid in sshbox.session_pids():
                os.kill(pid, 9)
            drops += 1
            await wait_for(pilot, lambda: app.box.session.state != session_mod.LIVE, timeout=10)
        # gputui reconnects by itself, without a key press
        await wait_for(pilot, lambda: app.box.session.state == session_mod.LIVE, timeout=20)
        n = app.box.state.samples_seen
        await wait_for(pilot, lambda: app.box.state.samples_seen > n + 1)
        seqs = [s for s in app.box.state.seqs if s >= start_seq]
        os.kill(job_pid, 0)  # the job's shell is still alive...
        assert "train run ☃" in tmux(sshbox, "ls").stdout  # ...in its tmux session
        panes = tmux(sshbox, "list-panes", "-a", "-F", "#{pane_current_command}").stdout.split()
        assert panes == ["python3"], panes
        await pilot.press("escape", "q")
    missing = sorted(set(range(seqs[0], seqs[-1] + 1)) - set(seqs))
    assert drops == 10 and not missing, "%d drops; missing seqs %s" % (drops, missing)


async def test_unprotected_job_is_flagged_and_the_same_in_tmux_is_not(sshbox):
    conn = await ssh.connect(target(sshbox))
    try:
        # A login terminal (pty) running a "GPU job" the simulator adopts by its marker.
        plain = await conn.create_process(
            "exec python3 -c 'import time; time.sleep(120)' GPUTUI_SIM_GPU_JOB plain",
            term_type="xterm")
        s = session_mod.RemoteSession(target(sshbox), simulate="adopt", remote_dir=sshbox.remote_dir)
        await s.open()
        await s.request(wire.TMUX_NEW, name="safe job",
                                command="exec python3 -c 'import time; time.sleep(120)' GPUTUI_SIM_GPU_JOB tmux")
        await s.close()
        await asyncio.sleep(1.5)
        out = subprocess.run([sys.executable, "-m", "tui", "status", "testbox", "--json", "--simulate",
                              "adopt", "--ssh-config", sshbox.ssh_config, "--remote-dir", sshbox.remote_dir],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        doc = json.loads(out.stdout)
        flagged = {j["cmd"].split()[-1]: j for j in doc["unprotected_jobs"]}
        assert "plain" in flagged and flagged["plain"]["gpu"]
        assert flagged["plain"]["reason"] == "will die if this SSH connection drops"
        assert "tmux" not in flagged
        gpu_cmds = [p["cmd"] for p in doc["processes"]]
        assert any(c.endswith("GPUTUI_SIM_GPU_JOB tmux") for c in gpu_cmds)
        assert [t["name"] for t in doc["tmux"]["sessions"]] == ["safe job"]
        plain.terminate()
    finally:
        conn.close()


async def test_tmux_panel_preview_interrupt_kill_rename(sshbox, tmp_path):
    from tui.ui.screens.modals import ConfirmScreen
    tmux(sshbox, "new-session", "-d", "-s", "it's \"mine\"", "-c", str(tmp_path))
    tmux(sshbox, "send-keys", "-t", "it's \"mine\"", "-l", "echo MARK-$((6*7)); sleep 300")
    tmux(sshbox, "send-keys", "-t", "it's \"mine\"", "Enter")
    tmux(sshbox, "new-session", "-d", "-s", "other", "sleep 300")
    app = make_app(sshbox, "idle", tmp_path)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(pilot, lambda: len(app.box.state.tmux_sessions()) == 2)
        await pilot.press("t")
        await wait_for(pilot, lambda: isinstance(app.screen, TmuxScreen))
        screen = app.screen
        screen.selected = [w["panes"][0]["id"] for s in app.box.state.tmux_sessions()
                           if s["name"] == "it's \"mine\"" for w in s["windows"]][0]
        await wait_for(pilot, lambda: "MARK-42" in screen.preview_text)
        # Ctrl-C goes to the selected pane only (after confirming)
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: tmux(sshbox, "list-panes", "-t", "it's \"mine\"", "-F",
                                           "#{pane_current_command}").stdout.strip() == "bash")
        assert tmux(sshbox, "list-panes", "-t", "other", "-F", "#{pane_current_command}").stdout.strip() == "sleep"
        # rename
        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(app.screen, JobScreen))
        app.screen.query_one("#name").value = "renamed ☃"
        await pilot.click("#ok")
        await wait_for(pilot, lambda: "renamed ☃" in tmux(sshbox, "ls").stdout)
        # kill (after confirming): only that session goes
        await pilot.press("k")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: "renamed" not in tmux(sshbox, "ls").stdout)
        assert "other" in tmux(sshbox, "ls").stdout
        await pilot.press("escape", "q")


async def test_attach_hands_off_the_terminal_and_comes_back(sshbox, tmp_path):
    tmux(sshbox, "new-session", "-d", "-s", "job", "sleep 300")
    app = make_app(sshbox, "idle", tmp_path)
    calls = []

    def fake_hand_off(the_app, argv):
        calls.append(argv)
        return 0

    app.hand_off_terminal = fake_hand_off
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: len(app.box.state.tmux_sessions()) == 1)
        await pilot.press("t")
        await wait_for(pilot, lambda: isinstance(app.screen, TmuxScreen))
        await pilot.press("enter")
        await wait_for(pilot, lambda: calls)
        sid = app.box.state.tmux_sessions()[0]["id"]
        assert calls[0] == ["ssh", "-t", "-F", sshbox.ssh_config, "--", "testbox",
                            "tmux attach-session -t '%s'" % sid]
        # the app is back and live after the hand-off
        n = app.box.state.samples_seen
        await wait_for(pilot, lambda: app.box.state.samples_seen > n)
        assert isinstance(app.screen, TmuxScreen)
        await pilot.press("escape", "q")


async def test_tmux_missing_on_the_box_is_explained(monkeypatch, tmp_path):
    from tui.remote.demo_box import DemoBox
    monkeypatch.setenv("PATH", str(tmp_path))  # the box has no tmux (python3 is found by path)
    box = await DemoBox().start()
    try:
        app = GputuiApp(box.target(), simulate="idle", stop_daemon_on_exit=True,
                        config=Config.load(str(tmp_path / "none.toml")), ledger=Ledger(str(tmp_path / "l.db")))
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.box.state.tmux_error() is not None)
            await pilot.press("t")
            await wait_for(pilot, lambda: isinstance(app.screen, TmuxScreen))
            await pilot.pause(0.2)
            notice = str(app.screen.query_one("#tmux-notice").render())
            assert "tmux is not installed on the box" in notice
            await pilot.press("escape", "q")
    finally:
        await box.stop()


async def test_demo_run_inside_tmux_leaves_the_users_tmux_alone(tmp_path, monkeypatch):
    """gputui demo started from inside the user's tmux must not kill that tmux on exit."""
    from tui.remote.demo_box import DemoBox
    outer_dir = tmp_path / "outer"
    outer_dir.mkdir()
    env = dict(os.environ, TMUX_TMPDIR=str(outer_dir))
    env.pop("TMUX", None)
    subprocess.run(["tmux", "new-session", "-d", "-s", "users-own", "sleep 300"], env=env, check=True)
    socket_path = str(outer_dir / ("tmux-%d" % os.getuid()) / "default")
    monkeypatch.setenv("TMUX", "%s,1,0" % socket_path)  # as inside that tmux
    box = await DemoBox().start()
    await box.stop()
    alive = subprocess.run(["tmux", "-S", socket_path, "has-session", "-t", "users-own"])
    subprocess.run(["tmux", "-S", socket_path, "kill-server"])
    assert alive.returncode == 0
