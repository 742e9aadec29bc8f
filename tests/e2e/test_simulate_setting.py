"""A host's `simulate` in the config is honoured by every command as `--simulate` is (issue 23):
status and doctor read the simulator without the flag; the flag still wins."""

import json
import os
import subprocess
import sys

from tui.core.config import Config, HostConfig
from tui.cli.contact import host_settings


def gputui(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "tui", *args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                          env=dict(os.environ))


class Args:
    simulate = None
    remote_dir = None


def test_flag_wins_over_the_setting():
    cfg = HostConfig(simulate="a100x2", remote_dir="/r")
    a = host_settings(Args(), cfg)
    assert (a.simulate, a.remote_dir) == ("a100x2", "/r")
    b = Args()
    b.simulate, b.remote_dir = "h100x8", "/mine"
    assert (host_settings(b, cfg).simulate, b.remote_dir) == ("h100x8", "/mine")
    assert host_settings(Args(), HostConfig()).simulate is None


def test_status_and_doctor_use_the_hosts_simulate(sshbox, isolated_dirs):
    os.makedirs(os.environ["GPUTUI_CONFIG_DIR"], exist_ok=True)
    with open(os.path.join(os.environ["GPUTUI_CONFIG_DIR"], "config.toml"), "w") as f:
        f.write('[hosts.testbox]\nsimulate = "a100x2"\nremote_dir = "%s"\nnet_check_urls = []\n'
                % sshbox.remote_dir)
    assert Config.load(os.path.join(os.environ["GPUTUI_CONFIG_DIR"], "config.toml")).host("testbox").simulate == "a100x2"
    r = gputui("status", "testbox", "--json", "--ssh-config", sshbox.ssh_config)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["backend"] == "sim" and [g["name"] for g in doc["gpus"]] == ["NVIDIA A100-SXM4-80GB"] * 2
    r = gputui("doctor", "testbox", "--json", "--no-smoke", "--ssh-config", sshbox.ssh_config)
    assert r.returncode in (0, 1, 2), r.stderr  # a verdict, not a connect failure
    assert "A100" in r.stdout
