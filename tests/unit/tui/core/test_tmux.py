"""tmux on the box (real tmux on an isolated server) and the protection verdicts."""

import os
import shutil
import subprocess
import time

import pytest

from remote_probe import tmux_control as tmux
from remote_probe.watch import protection
from tui.core.jobs import tmux_rows as jobs
from tui.remote.ssh import Target

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed")

NAMES = ["plain", "with space", "it's \"quoted\"", "训练 ☃ unicode", "$(touch pwned)"]


@pytest.fixture
def tmux_server(tmp_path, monkeypatch):
    """A private tmux server: TMUX_TMPDIR keeps tests off the user's own sessions, and a
    throwaway HOME keeps its panes' shells off the developer's ~/.bashrc (a pyenv init there
    waiting on a stale rehash lock left every pane's job untyped for 60 s)."""
    monkeypatch.setenv("TMUX_TMPDIR", str(tmp_path))
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TMUX", raising=False)
    monkeypatch.chdir(tmp_path)
    binary = shutil.which("tmux")
    yield tmp_path
    env = dict(os.environ, TMUX_TMPDIR=str(tmp_path))
    env.pop("TMUX", None)  # never the developer's own tmux server
    subprocess.run([binary, "kill-server"], stderr=subprocess.DEVNULL, env=env)


def wait_for(pred, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        value = pred()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out")


def test_no_server_means_no_sessions(tmux_server):
    assert tmux.list_sessions() == []


@pytest.mark.parametrize("name", NAMES)
def test_jobs_with_awkward_names_run_and_are_listed(tmux_server, name):
    job = tmux.new_job(name, "echo hello-from-job; sleep 30", cwd=str(tmux_server))
    sessions = tmux.list_sessions()
    assert [s["name"] for s in sessions] == [name]
    assert sessions[0]["id"] == job["session"]
    wait_for(lambda: "hello-from-job" in tmux.capture(job["pane"]).replace("echo hello-from-job", ""))
    # tmux reads the pane's directory from its foreground process: empty for a moment while
    # the shell starts on a loaded machine, so read once it has one
    pane = wait_for(lambda: [p for p in [tmux.list_sessions()[0]["windows"][0]["panes"][0]] if p["path"]])[0]
    assert pane["id"] == job["pane"] and pane["path"] == str(tmux_server)
    assert not os.path.exists(tmux_server / "pwned")


def test_running_job_vs_idle_shell_and_ctrl_c(tmux_server):
    job = tmux.new_job("trainer", "sleep 300", cwd=str(tmux_server))
    pane = lambda: tmux.list_sessions()[0]["windows"][0]["panes"][0]  # noqa: E731
    wait_for(lambda: pane()["running"])
    assert pane()["command"] == "sleep"
    tmux.interrupt(job["pane"])
    wait_for(lambda: not pane()["running"])


def test_rename_and_kill_act_on_the_right_session(tmux_server):
    a = tmux.new_job("alpha", "sleep 60")
    b = tmux.new_job("beta", "sleep 60")
    tmux.rename_session(b["session"], "beta 2 ☃")
    assert sorted(s["name"] for s in tmux.list_sessions()) == ["alpha", "beta 2 ☃"]
    tmux.kill_session(a["session"])
    assert [s["name"] for s in tmux.list_sessions()] == ["beta 2 ☃"]
    with pytest.raises(tmux.TmuxError, match="can't find session"):
        tmux.kill_session(a["session"])


def test_colours_survive_capture(tmux_server):
    job = tmux.new_job("colour", "printf '\\033[31mRED\\033[0m\\n'; sleep 30")
    text = wait_for(lambda: (lambda t: t if "\x1b[31mRED" in t else None)(tmux.capture(job["pane"])))
    assert "\x1b[31mRED" in text  # the colour escape itself, not the typed command


def test_tmux_missing_says_so_with_an_install_hint(tmux_server, monkeypatch):
    monkeypatch.setenv("PATH", str(tmux_server))  # no tmux here
    status = tmux.status()
    assert status["missing"] and "not installed" in status["error"]
    assert "install" in status
    with pytest.raises(tmux.TmuxMissing):
        tmux.list_sessions()


CHAINS = [
    ("in tmux", [(10, "python", 34816, False), (9, "bash", 34816, False), (8, "tmux: server", 0, False)],
     (True, "runs in tmux")),
    ("plain ssh login", [(10, "python", 34816, False), (9, "bash", 34816, False), (8, "sshd", 0, False)],
     (False, "will die if this SSH connection drops")),
    ("nohup", [(10, "python", 34816, True), (9, "bash", 34816, False), (8, "sshd", 0, False)],
     (True, "ignores hangups (nohup)")),
    ("setsid", [(10, "python", 0, False), (8, "sshd", 0, False)], (True, "detached from any terminal")),
    ("screen", [(10, "python", 34816, False), (9, "SCREEN", 0, False), (8, "sshd", 0, False)],
     (True, "runs in SCREEN")),
    ("local console", [(10, "python", 1025, False), (9, "login", 1025, False)], (True, "not started from SSH")),
]


@pytest.mark.parametrize("name, chain, expected", CHAINS, ids=[c[0] for c in CHAINS])
def test_protection_verdict(name, chain, expected):
    assert protection.verdict(chain) == expected


def test_ancestry_of_a_real_process():
    chain = protection.ancestry(os.getpid())
    assert chain[0][0] == os.getpid() and chain[0][1].startswith("python")


def test_attach_command_quotes_the_target():
    t = Target.parse("alice@gpu-box:2222", ssh_config="/tmp/my config")
    argv = jobs.attach_argv(t, "$3")
    assert argv == ["ssh", "-t", "-F", "/tmp/my config", "-p", "2222", "-l", "alice", "--",
                    "gpu-box", "tmux attach-session -t '$3'"]
    t = Target.parse("ssh -i ~/k -J hop -o ConnectTimeout=5 -p 2 root@h")
    assert jobs.attach_argv(t, "$1")[2:-1] == ["-p", "2", "-l", "root", "-i", "~/k", "-J", "hop",
                                               "-o", "ConnectTimeout=5", "--", "h"]


@pytest.mark.parametrize("name, ok", [("train", True), ("a.b", False), ("x:y", False), ("  ", False)])
def test_session_names_tmux_would_mangle_are_refused(name, ok):
    assert (jobs.safe_session_name(name)[1] is None) is ok


def test_pane_rows_survive_a_probe_that_leaves_fields_out():
    from tui.core.jobs.tmux_rows import pane_rows
    rows = pane_rows([{"id": "$1", "windows": [{"panes": [{"id": "%1"}, {"command": "no id"}]}]},
                      {"id": "$2"}], 100.0)
    assert [r["pane"] for r in rows] == ["%1"]
    assert rows[0]["command"] == "? (idle shell)" and rows[0]["window"] == "?:"
