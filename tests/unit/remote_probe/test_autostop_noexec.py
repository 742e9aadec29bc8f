"""Issue 23: with the probe's state in a noexec /tmp fallback, the cancel command gputui
prints still runs (`sh FILE`, not `FILE`, which exits 126 there)."""

import os
import subprocess
import sys

import pytest

from remote_probe.autostop.policy import Autostop

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


@pytest.fixture
def noexec_dir(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a noexec tmpfs needs root")
    where = tmp_path / "noexec"
    where.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "noexec,size=4m", "tmpfs", str(where)],
                      stderr=subprocess.DEVNULL).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    yield where
    subprocess.run(["umount", "-l", str(where)])


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_printed_cancel_command_runs_from_a_noexec_dir(noexec_dir, shell):
    state = noexec_dir / "gputui-1000"
    state.mkdir(mode=0o700)
    auto = Autostop(str(state), probe_command=[sys.executable, "-m", "remote_probe"])
    auto.arm("true", idle_seconds=600, grace=60)
    env = dict(os.environ, PYTHONPATH=REPO)
    script = str(state / "cancel-autostop")
    assert subprocess.run(["bash", "-c", script], env=env, stderr=subprocess.DEVNULL).returncode == 126
    cmd = auto.status()["cancel_command"]
    done = subprocess.run([shell, "-c", cmd], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "autostop cancelled" in done.stdout
    assert Autostop(str(state)).armed is None
