"""A simulated fleet: one real sshd on 127.0.0.1, many ssh_config aliases pointing at it, each
box with its own remote dir (so its own probe daemon) and its own simulator scenario, taken from
the gputui config the fleet reads; plus an alias nothing listens on and a box the ledger says
was released."""

import os

import pytest

from tests.support.sshd import free_port, start_sshd, stop_daemon, stop_sshd


class Fleet:
    def __init__(self, box, ssh_config, boxes, config_dir):
        self.box, self.ssh_config, self.boxes, self.config_dir = box, ssh_config, boxes, config_dir

    def remote_dir(self, name):
        return os.path.join(str(self.box.root), "remote-%s" % name)


def write_fleet(box, boxes, extra_aliases=(), alarm_minutes=0.05):
    """boxes: {alias: (scenario, rate)}. Writes ssh_config aliases and the gputui config."""
    user_block = open(box.ssh_config).read().split("Host testbox", 1)[1]
    lines = []
    for alias in list(boxes) + list(extra_aliases):
        lines.append("Host %s%s" % (alias, user_block))
    dead_port = free_port()
    lines.append("Host deadbox\n  HostName 127.0.0.1\n  Port %d\n  User nobody\n" % dead_port)
    cfg = box.root / "fleet_ssh_config"
    cfg.write_text("\n".join(lines))
    conf = ["[defaults]", "idle_alarm_minutes = %s" % alarm_minutes, ""]
    for alias, (scenario, rate) in boxes.items():
        conf += ["[hosts.%s]" % alias, 'simulate = "%s"' % scenario,
                 'remote_dir = "%s"' % os.path.join(str(box.root), "remote-%s" % alias)]
        if rate is not None:
            conf.append("rate = %s" % rate)
        conf.append("")
    config_dir = os.environ["GPUTUI_CONFIG_DIR"]
    os.makedirs(config_dir, exist_ok=True)
    with open(os.path.join(config_dir, "config.toml"), "w") as f:
        f.write("\n".join(conf))
    return str(cfg)


def release_in_ledger(host, cost=12.5, rate=2.5, start=1000.0):
    from tui.core.billing.ledger import Ledger
    ledger = Ledger()
    row = ledger.open_session(host, "boot-gone", start, gpu_model="NVIDIA A10", gpu_count=1,
                              rate=rate, currency="CNY", now=start)
    ledger.update(row["id"], end=start + 5 * 3600, cost=cost, ended_how="released")
    ledger.close()


SCENARIO = {"busy": ("a100x2", 10.0), "idle1": ("idle", 8.4), "cpubox": ("cpu-only", 1.0),
            "idle2": ("idle", None)}


@pytest.fixture
def simfleet(tmp_path_factory):
    """busy (a100x2), idle1 (idle, ¥8.40/h), cpubox, idle2 (idle, no rate: not in the default
    set), deadbox (nothing listens), gone (released in the ledger)."""
    box = start_sshd(tmp_path_factory.mktemp("fleet"))
    box.trust()
    boxes = {k: v for k, v in SCENARIO.items() if k != "idle2"}
    ssh_config = write_fleet(box, boxes)
    release_in_ledger("gone")
    with open(os.path.join(os.environ["GPUTUI_CONFIG_DIR"], "config.toml"), "a") as f:
        f.write("[hosts.deadbox]\nrate = 3\n\n[hosts.gone]\nrate = 2.5\n")
    fleet = Fleet(box, ssh_config, boxes, os.environ["GPUTUI_CONFIG_DIR"])
    yield fleet
    for name in boxes:
        stop_daemon(fleet.remote_dir(name))
    stop_sshd(box)
