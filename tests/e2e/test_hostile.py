"""A hostile box end to end (issue 10): argv, tmux names and file names full of markup,
terminal escapes, bidi overrides and odd bytes. Nothing may crash, hang, or reach the
user's terminal as a control code; every command still says what it found."""

import json
import os
import subprocess
import sys
import time

import pytest
import tomli_w

from tui.remote import ssh

from tests.support.sshd import box_tmux_env
from tests.support.hostile import ARGV0_SHOWN, CLEAR, OSC52, TMUX_NAMES, assert_inert, hostile_job_command, make_artifacts

pytestmark = pytest.mark.timeout(300)


def cli(box, *args, timeout=120):
    return subprocess.run([sys.executable, "-m", "tui", *args, "testbox", "--simulate", "adopt",
                           "--ssh-config", box.ssh_config, "--remote-dir", box.remote_dir],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)


def write_config(isolated_dirs, hosts):
    cfg_dir = isolated_dirs / "config"
    cfg_dir.mkdir(exist_ok=True)
    (cfg_dir / "config.toml").write_text(tomli_w.dumps({"hosts": hosts}))


async def start_hostile_box(box):
    """A GPU job with hostile argv on a bare SSH terminal (unprotected) and tmux sessions
    and windows with hostile names. Returns the SSH connection holding the job."""
    conn = await ssh.connect(ssh.Target.parse("testbox", ssh_config=box.ssh_config))
    await conn.create_process(hostile_job_command(), term_type="xterm")
    env = box_tmux_env(box)
    for name in TMUX_NAMES:
        subprocess.run(["tmux", "new-session", "-d", "-s", name, "-n", name, "sleep 300"], env=env,
                       check=True)
    time.sleep(1.5)
    return conn


async def test_status_text_and_json_of_a_hostile_box(sshbox, isolated_dirs):
    write_config(isolated_dirs, {"testbox": {"rate": float("nan")}})
    conn = await start_hostile_box(sshbox)
    try:
        text = cli(sshbox, "status")
        assert text.returncode == 0, text.stderr
        assert_inert(text.stdout)
        assert_inert(text.stderr)
        out = text.stdout.decode()
        assert ARGV0_SHOWN in out  # markup literally, the escape shown and not obeyed
        assert "tmux session [/]" in out and "\\u202e" in out
        assert b"hosts.testbox.rate" in text.stderr and b"not a finite number" in text.stderr
        js = cli(sshbox, "status", "--json")
        assert js.returncode == 0, js.stderr
        assert b"\x1b" not in js.stdout and b"NaN" not in js.stdout
        doc = json.loads(js.stdout)
        cmds = [p["cmd"] for p in doc["processes"]]
        assert any(OSC52 in c and CLEAR in c for c in cmds)  # JSON keeps the data exactly
        assert sorted(s["name"] for s in doc["tmux"]["sessions"]) == sorted(
            s["name"] for s in doc["tmux"]["sessions"] if s["name"])
        assert any(j["cmd"].endswith("hostile") for j in doc["unprotected_jobs"])
    finally:
        conn.close()


async def test_checklist_text_with_hostile_artifact_names(sshbox, tmp_path, isolated_dirs):
    work = tmp_path / "work"
    # bad_utf8: the probe's side of issue 10 (helper D) carries it; added when merged
    made = make_artifacts(work / "ckpt")
    write_config(isolated_dirs, {"testbox": {
        "rate": 1.0, "provider": "runpod", "artifact_paths": [str(work)], "search_paths": [str(work)],
        "temp_dirs": [str(tmp_path / "none")], "cache_dirs": [], "python": sys.executable,
        "budget_day": float("inf")}})
    conn = await start_hostile_box(sshbox)
    try:
        t0 = time.monotonic()
        r = cli(sshbox, "checklist")
        assert time.monotonic() - t0 < 100
        assert r.returncode in (1, 2), r.stderr  # not safe to release: nothing is downloaded
        assert_inert(r.stdout)
        assert_inert(r.stderr)
        out = r.stdout.decode()
        assert "not downloaded:" in out
        assert "\\x1b]52;c;" in out or "\\x1b[2J" in out or "[@click=app.quit]" in out
        assert "not safe to release" in out
        assert b"hosts.testbox.budget_day" in r.stderr  # config problems: every command says them
        js = cli(sshbox, "checklist", "--json")
        assert b"\x1b" not in js.stdout
        doc = json.loads(js.stdout)
        items = {i["key"]: i for i in doc["items"]}
        assert items["artifacts"]["verdict"] == "fail"
        listed = "\n".join(items["artifacts"]["details"])
        for kind in ("long", "long_utf8", "markup", "click", "plain"):
            assert os.path.basename(made[kind]).decode() in listed, kind
        if "bad_utf8" in made:
            assert "bad\\xff\\xfename.pt" in listed  # the bytes shown, the line still there
    finally:
        conn.close()


async def test_connect_on_a_real_terminal_never_passes_the_box_s_escapes_through(sshbox, isolated_dirs):
    """The whole app on a pseudo-terminal: the raw bytes it writes hold the hostile argv
    only in its visible form; OSC 52 (clipboard), the bidi override and a bare CSI never."""
    from tests.e2e.test_demo_sandbox import run_in_pty
    conn = await start_hostile_box(sshbox)
    try:
        env = dict(os.environ, TERM="xterm-256color", COLUMNS="160", LINES="45")
        env.pop("TMUX", None)
        argv = [sys.executable, "-m", "tui", "connect", "testbox", "--simulate", "adopt",
                "--ssh-config", sshbox.ssh_config, "--remote-dir", sshbox.remote_dir]
        code, out = run_in_pty(argv, lambda o: b"aGk=" in o and b"tmux" in o, send=[b"q"],
                               timeout=90, env=env)
    finally:
        conn.close()
    assert code == 0, out[-2000:]
    assert b"\\x1b" in out and b"]52;c;aGk=" in out  # drawn as text (the escape styled apart)
    assert b"\x1b]52;c;aGk=" not in out and OSC52.encode() not in out
    assert "\u202e".encode() not in out and b"\xc2\x9b" not in out
