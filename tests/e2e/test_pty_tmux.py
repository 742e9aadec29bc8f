"""Issue 23: a PTY-only proxy whose ~/.bashrc execs tmux for interactive logins (Vast's
default). gputui must start its probe outside the user's tmux, and never leave its receiver
in a pane (the user's next ssh would land in it and show raw probe JSON)."""

import json
import os
import subprocess
import sys
import time

import pytest

from tests.support.pty_fixtures import pty_tmux_box  # noqa: F401

pytestmark = pytest.mark.timeout(240)


def gputui(*args, timeout=150):
    return subprocess.run([sys.executable, "-m", "tui", *args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def pane_commands(box):
    sock = os.path.join(str(box.root), "tmux-%d" % os.getuid(), "default")
    r = subprocess.run(["tmux", "-S", sock, "list-panes", "-a", "-F", "#{pane_pid} #{pane_current_command}"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return r.stdout.split("\n") if r.returncode == 0 else []


def test_status_through_a_tmux_login_leaves_no_receiver_in_a_pane(pty_tmux_box):
    t0 = time.time()
    r = gputui("status", "testbox", "--json", "--simulate", "a100x2", "--ssh-config",
               pty_tmux_box.ssh_config, "--remote-dir", pty_tmux_box.remote_dir)
    took = time.time() - t0
    print("took %.1f s rc %s stderr %s panes %s" % (took, r.returncode, r.stderr[-600:], pane_commands(pty_tmux_box)))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["transport"] == "pty"
    assert took < 40, took  # it used to sit 60 s, then fail saying "20 s"
    time.sleep(1)
    panes = [ln for ln in pane_commands(pty_tmux_box) if ln.strip()]
    assert panes, "the user's tmux session should still be there, with a shell"
    for line in panes:  # the user's panes hold shells, not gputui's receiver or probe
        assert line.split()[1] in ("bash", "zsh", "fish", "sh") and "python" not in line, panes
        pid = int(line.split()[0])
        kids = subprocess.run(["ps", "-o", "comm=", "--ppid", str(pid)], stdout=subprocess.PIPE,
                              text=True).stdout.split()
        assert not any(k in ("python", "python3", "dd", "sh") for k in kids), (panes, kids)
    # again, as `r` would: the next start also runs outside the pane
    again = gputui("status", "testbox", "--json", "--simulate", "a100x2", "--ssh-config",
                   pty_tmux_box.ssh_config, "--remote-dir", pty_tmux_box.remote_dir)
    assert again.returncode == 0, again.stderr
