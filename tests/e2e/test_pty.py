"""Issue 9 §4: a PTY-only proxy (RunPod's basic SSH) through a real sshd whose
ForceCommand grants only an interactive shell on a terminal, with no SFTP subsystem."""

import asyncio
import json
import os
import subprocess
import sys

import pytest

from tui.core.transfer import download as transfer
from tui.remote import session as session_mod
from tui.remote import ssh, transports
from tui.remote.probe import files as probe_files
from tui.remote.probe.bundle import build_probe, probe_filename

from tests.support.pty_fixtures import PTY_ONLY, me, pty_only_box, start_box, stop_box, write_pty_only  # noqa: F401

pytestmark = pytest.mark.timeout(240)


def target(box):
    return ssh.Target.parse("testbox", ssh_config=box.ssh_config)


class Rec(session_mod.Listener):
    def __init__(self):
        self.samples, self.states, self.notices = [], [], []

    def on_sample(self, s):
        self.samples.append(s)

    def on_state(self, state, detail=""):
        self.states.append((state, detail))

    def on_notice(self, text):
        self.notices.append(text)


async def wait_until(cond, timeout=60):
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not cond():
        assert loop.time() < end, "timed out"
        await asyncio.sleep(0.05)


def test_the_fixture_really_refuses_exec_and_sftp(pty_only_box):
    """The box is shaped like RunPod's proxy: ssh with a command fails, sftp fails."""
    base = ["ssh", "-F", pty_only_box.ssh_config, "-o", "BatchMode=yes", "testbox"]
    r = subprocess.run(base + ["echo hi"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert r.returncode == 1 and "doesn't support PTY" in r.stdout
    r = subprocess.run(["sftp", "-F", pty_only_box.ssh_config, "-b", "-", "testbox"], input="ls\n",
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=30)
    assert r.returncode != 0


async def test_dashboard_samples_and_checklist_download_over_the_terminal(pty_only_box, tmp_path):
    rec = Rec()
    s = session_mod.RemoteSession(target(pty_only_box), simulate="a100x2",
                                  remote_dir=pty_only_box.remote_dir, listener=rec)
    runner = asyncio.ensure_future(s.run())
    try:
        await wait_until(lambda: s.state == session_mod.LIVE and len(rec.samples) >= 2)
        assert s.transport_name == transports.PTY and s.transport_label == "terminal (PTY)"
        assert s.uploaded
        assert any("doesn't support PTY" in n for n in rec.notices), rec.notices
        _, sha = build_probe()
        with open(os.path.join(pty_only_box.remote_dir, probe_filename(sha)), "rb") as f:
            assert f.read() == build_probe()[0]  # raw bytes through the terminal, intact
        assert len(rec.samples[-1]["gpus"]) == 2
        seqs = [m["seq"] for m in rec.samples]
        assert seqs == sorted(seqs)
        snap = await s.fresh_snapshot()
        assert [g["name"] for g in snap["inventory"]["gpus"]] == ["NVIDIA A100-SXM4-80GB"] * 2
        # tmux over the same channel
        tm = await s.request("tmux_list")
        assert "sessions" in tm or "tmux" in json.dumps(tm)

        # A dropped link: the session comes back through the terminal by itself (no exec
        # attempt first: the choice is remembered) and the daemon fills the gap.
        daemon_pid = s.client.hello["pid"]
        for pid in pty_only_box.session_pids():
            os.kill(pid, 9)
        await wait_until(lambda: s.state != session_mod.LIVE)
        s.retry_now()
        n = len(rec.samples)
        await wait_until(lambda: s.state == session_mod.LIVE and len(rec.samples) > n + 1)
        assert s.client.hello["pid"] == daemon_pid and s.transport_name == transports.PTY
        seqs = [m["seq"] for m in rec.samples]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "gap in samples"
        sessions = [line for line in pty_only_box.log.read_text().splitlines()
                    if "Starting session:" in line]
        no_tty = [line for line in sessions if " on pts/" not in line]
        assert len(no_tty) == 1 and len(sessions) >= 3, "exec was tried again after the refusal"

        # Checklist: gather on the box, download through the probe channel, verified.
        from tui.core.billing.clock import BillingClock
        from tui.core.config import HostConfig
        from tui.core.providers import resolve
        from tui.core.checks.release_actions import Release
        work = tmp_path / "work"
        (work / "ckpt").mkdir(parents=True)
        payload = os.urandom((3 << 20) + 12345)  # several chunks and a ragged end
        (work / "ckpt" / "last.pt").write_bytes(payload)
        (work / "notes.txt").write_text("loss 0.1\n")
        cfg = HostConfig(artifact_paths=[str(work)], search_paths=[str(work)], temp_dirs=[],
                         cache_dirs=[], provider="runpod")
        clock = BillingClock("testbox", cfg, None)
        clock.on_inventory(snap["inventory"])
        rel = Release("testbox", s, cfg, resolve({}, cfg), "sessionkey")
        await rel.gather()
        rel.items([], [], [], None, clock.figures())
        todo = {st["path"] for st in rel.to_download()}
        assert str(work / "ckpt" / "last.pt") in todo
        results = await rel.download_missing()
        assert {r.status for r in results} == {"downloaded"}, results
        local = transfer.local_path_for(rel.base, str(work / "ckpt" / "last.pt"))
        with open(local, "rb") as f:
            assert f.read() == payload
        assert s.sftp_refused is None  # SFTP was never tried on a terminal-only box

        # Resumable: a cut download continues from its .part and is verified whole.
        (work / "ckpt" / "more.pt").write_bytes(payload[::-1])
        dest = transfer.local_path_for(rel.base, str(work / "ckpt" / "more.pt"))
        with open(dest + transfer.PART_SUFFIX, "wb") as f:
            f.write(payload[::-1][:1000000])
        st = os.stat(work / "ckpt" / "more.pt")
        sha = (await s.request("sha256", paths=[str(work / "ckpt" / "more.pt")]))["sha256"]
        async with s.file_client() as files:
            assert isinstance(files, probe_files.ProbeFiles)
            r = await transfer.download(files, str(work / "ckpt" / "more.pt"), rel.base, st.st_size,
                                        st.st_mtime, expected_sha=sha[str(work / "ckpt" / "more.pt")])
            assert r.status == "resumed" and r.bytes == len(payload) - 1000000
            with open(dest, "rb") as f:
                assert f.read() == payload[::-1]
            # a file the box cannot read is an error, not a hang or an empty file
            with pytest.raises(Exception, match="cannot read"):
                async with files.open("/nonexistent/file") as fh:
                    await fh.read(10, 0)
    finally:
        await s.close()
        runner.cancel()


def gputui(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "tui", *args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def test_status_cli_through_the_terminal(pty_only_box):
    r = gputui("status", "testbox", "--json", "--simulate", "a100x2", "--ssh-config",
               pty_only_box.ssh_config, "--remote-dir", pty_only_box.remote_dir)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["transport"] == "pty"
    assert [g["name"] for g in doc["gpus"]] == ["NVIDIA A100-SXM4-80GB"] * 2
    assert "terminal (PTY) session" in r.stderr  # said, not hidden in a log


@pytest.fixture
def pty_dead_shell_box(tmp_path_factory):
    """PTY-only, but the shell there exits at once: starting through it must fail fatally."""
    root = tmp_path_factory.mktemp("ptydead")
    dead = PTY_ONLY.split("exec /bin/bash")[0] + "echo 'pod is stopping'; exit 1\n"
    script = write_pty_only(root, dead)
    box = start_box(root, [me()], extra_config="ForceCommand %s" % script, subsystem=None)
    yield box
    stop_box(box)


async def test_pty_only_box_whose_shell_fails_stops_the_reconnect_loop(pty_dead_shell_box):
    rec = Rec()
    s = session_mod.RemoteSession(target(pty_dead_shell_box), simulate="idle",
                                  remote_dir=pty_dead_shell_box.remote_dir, listener=rec)
    await asyncio.wait_for(s.run(), 90)  # returns by itself: FAILED, no reconnect loop
    state, detail = rec.states[-1]
    assert state == session_mod.FAILED
    assert "only an interactive terminal (PTY) session" in detail and "pod is stopping" in detail
    assert session_mod.RECONNECTING not in [st for st, _ in rec.states], rec.states


async def test_app_dashboard_over_the_terminal_names_the_transport(pty_only_box):
    from tui.ui.app import GputuiApp
    from tui.ui.widgets.gpu_panel import GpuPanel

    from tests.e2e.test_app import SIZE, wait_for as wait_pilot
    app = GputuiApp(target(pty_only_box), simulate="a100x2", remote_dir=pty_only_box.remote_dir,
                    stop_daemon_on_exit=True)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_pilot(pilot, lambda: app.box.state.samples_seen >= 3, timeout=60)
        await pilot.pause(0.2)
        assert str(app.query_one(GpuPanel).render()).count("A100-SXM4-80GB") == 2
        status = str(app.query_one("#status").render())
        assert "live" in status and "via terminal (PTY)" in status
        assert any("terminal (PTY) session" in str(n.message) for n in app._notifications)
        await pilot.press("q")


def test_header_names_only_the_unusual_transport():
    from tui.ui.widgets.status_bar import render_status
    plain = render_status("box", "A100", "live", 12.0, 0.5).plain
    assert "via" not in plain
    pty = render_status("box", "A100", "live", 12.0, 0.5, transport="terminal (PTY)").plain
    assert "via terminal (PTY)" in pty


@pytest.fixture
def silent_refusal_box(tmp_path_factory):
    """PTY-only, but a command is refused without any message, just exit status 1."""
    root = tmp_path_factory.mktemp("ptysilent")
    script = write_pty_only(root, PTY_ONLY.replace(
        '  echo "Error: Your SSH client doesn\'t support PTY"\n', ""))
    box = start_box(root, [me()], extra_config="ForceCommand %s" % script, subsystem=None)
    yield box
    from tests.support.sshd import stop_daemon
    stop_daemon(box.remote_dir)
    stop_box(box)


async def test_an_exec_refusal_without_words_also_tries_the_terminal(silent_refusal_box):
    assert "doesn't support" not in (silent_refusal_box.root / "pty_only.sh").read_text()
    reply = await session_mod.snapshot(target(silent_refusal_box), simulate="idle",
                                       remote_dir=silent_refusal_box.remote_dir)
    assert reply["transport"] == "pty"
    assert any("did not run gputui's start command: exit status 1" in n for n in reply["notices"])


def test_doctor_and_checklist_cli_through_the_terminal(pty_only_box, tmp_path, isolated_dirs):
    import tomli_w
    work = tmp_path / "work"
    work.mkdir()
    (work / "model.safetensors").write_bytes(os.urandom(1024))
    cfg_dir = isolated_dirs / "config"
    cfg_dir.mkdir(exist_ok=True)
    (cfg_dir / "config.toml").write_text(tomli_w.dumps({"hosts": {"testbox": {
        "rate": 1.0, "provider": "runpod", "artifact_paths": [str(work)], "search_paths": [str(work)],
        "temp_dirs": [], "cache_dirs": [], "python": sys.executable, "net_check_urls": []}}}))
    box = ["--simulate", "a100x2", "--ssh-config", pty_only_box.ssh_config,
           "--remote-dir", pty_only_box.remote_dir]
    r = gputui("checklist", "testbox", "--json", *box)
    doc = json.loads(r.stdout)
    assert {i["key"]: i["verdict"] for i in doc["items"]}["artifacts"] == "fail"  # not downloaded
    assert "terminal (PTY) session" in r.stderr
    r = gputui("doctor", "testbox", "--json", "--no-smoke", *box)
    doc = json.loads(r.stdout)
    assert doc["checks"] and doc["facts"]
    assert "terminal (PTY) session" in r.stderr
