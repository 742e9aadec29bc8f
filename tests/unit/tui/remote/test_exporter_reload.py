"""`gputui exporter` follows the config file (issue 23: "the exporter never sees hosts added
later"): a host added to the config joins the running fleet, a changed rate applies to its box,
a broken edit keeps what was read before, and boxes named on the command line stay the set."""

import io
import os

from tui.core.config import Config
from tui.core.config_reload import ConfigWatcher
from tui.core.fleet.rows import FleetHost
from tui.remote.exporter import reload_config
from tui.remote.fleet_pool import Fleet


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    st = os.stat(path)  # a second write within the same mtime tick still counts as a change
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


def fleet_of(path, hosts):
    config = Config.load(path)
    return Fleet([FleetHost(h) for h in hosts], config), ConfigWatcher(path)


def test_a_host_added_to_the_config_joins_and_a_rate_applies(tmp_path):
    path = str(tmp_path / "config.toml")
    write(path, "[hosts.box1]\nrate = 2.0\n")
    fleet, watch = fleet_of(path, ["box1"])
    said = io.StringIO()
    reload_config(fleet, watch, announce=said)
    assert said.getvalue() == "" and [b.host for b in fleet.boxes] == ["box1"]  # nothing changed
    write(path, "[hosts.box1]\nrate = 3.5\n\n[hosts.box2]\nrate = 1.0\n")
    reload_config(fleet, watch, announce=said)
    assert [b.host for b in fleet.boxes] == ["box1", "box2"]
    assert "box2" in fleet.sessions  # it gets a session like the boxes found at start
    assert fleet.box("box1").cfg.rate == 3.5 and fleet.box("box2").cfg.rate == 1.0
    out = said.getvalue()
    assert "rate: 2.0 → 3.5" in out and "box2" in out
    reload_config(fleet, watch, announce=said)  # unchanged since: no second announcement
    assert said.getvalue() == out


def test_a_broken_edit_keeps_the_fleet_and_says_why(tmp_path):
    path = str(tmp_path / "config.toml")
    write(path, "[hosts.box1]\nrate = 2.0\n")
    fleet, watch = fleet_of(path, ["box1"])
    write(path, "[hosts.box1\nrate = = 9\n")
    said = io.StringIO()
    reload_config(fleet, watch, announce=said)
    assert fleet.box("box1").cfg.rate == 2.0 and [b.host for b in fleet.boxes] == ["box1"]
    assert path in said.getvalue()


def test_hosts_named_on_the_command_line_stay_the_set(tmp_path):
    path = str(tmp_path / "config.toml")
    write(path, "[hosts.box1]\nrate = 2.0\n")
    fleet, watch = fleet_of(path, ["box1"])
    write(path, "[hosts.box1]\nrate = 4.0\n\n[hosts.box2]\n")
    reload_config(fleet, watch, explicit=True, announce=io.StringIO())
    assert [b.host for b in fleet.boxes] == ["box1"] and fleet.box("box1").cfg.rate == 4.0
