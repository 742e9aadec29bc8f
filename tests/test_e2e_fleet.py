"""The fleet end to end through a real sshd: five boxes (busy, idle and billing, CPU-only,
unreachable, released), the forgotten-box alarm and `gputui fleet --check`'s exit code."""

import json
import subprocess
import sys
import time

from .fleet_fixtures import simfleet  # noqa: F401 - the fixture


def gputui(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "tui", *args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def test_fleet_json_then_check_alarms_on_the_idle_box(simfleet):  # noqa: F811
    r = gputui("fleet", "--json", "--ssh-config", simfleet.ssh_config, "--timeout", "60")
    doc = json.loads(r.stdout)
    rows = {b["host"]: b for b in doc["boxes"]}
    assert set(rows) == {"busy", "idle1", "cpubox", "deadbox", "gone"}, r.stderr
    assert rows["busy"]["state"] == "live" and rows["busy"]["jobs"] == 2
    assert [g["mem_total"] for g in rows["busy"]["gpus"]] == [81920, 81920]
    assert rows["busy"]["idle_for"] is None and rows["busy"]["cost"] > 0
    assert rows["cpubox"]["state"] == "live" and rows["cpubox"]["gpus"] == []
    assert rows["cpubox"]["idle_for"] is None  # no GPU is never "idle GPUs"
    assert rows["deadbox"]["state"] == "unreachable"
    assert "refused" in rows["deadbox"]["reason"].lower(), rows["deadbox"]["reason"]
    assert rows["gone"]["state"] == "released" and rows["gone"]["cost"] == 12.5
    assert rows["idle1"]["state"] == "live" and rows["idle1"]["rate"] == 8.4
    assert rows["idle1"]["autostop"] == "off"
    # The daemons keep sampling after the first run; the idle one crosses the 3 s threshold.
    time.sleep(4)
    r = gputui("fleet", "--check", "--ssh-config", simfleet.ssh_config, "--timeout", "60")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "ALARM: 1 box idle, ¥8.40/h burning" in r.stdout
    line = next(l for l in r.stdout.splitlines() if l.startswith("idle1"))
    assert "IDLE, BILLING" in line
    busy = next(l for l in r.stdout.splitlines() if l.startswith("busy"))
    assert "IDLE, BILLING" not in busy and " live " in busy
    # The explicit list narrows the fleet: without the idle box, the check passes.
    r = gputui("fleet", "--check", "busy", "cpubox", "gone", "--ssh-config", simfleet.ssh_config)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 of 3 boxes live; none idle and billing" in r.stdout
