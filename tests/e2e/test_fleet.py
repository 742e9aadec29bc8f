"""The fleet end to end through a real sshd: five boxes (busy, idle and billing, CPU-only,
unreachable, released), the forgotten-box alarm and `gputui fleet --check`'s exit code."""

import json
import subprocess
import sys
import time

from tests.support.fleet_fixtures import simfleet  # noqa: F401 - the fixture


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


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def descendants(pid):
    """Every process below `pid` (the per-connection sshd processes and their children)."""
    out, todo = [], [pid]
    while todo:
        kids = subprocess.run(["pgrep", "-P", str(todo.pop())], stdout=subprocess.PIPE,
                              text=True).stdout.split()
        out += [int(k) for k in kids]
        todo += kids
    return out


async def test_fleet_rows_follow_a_drop_and_the_reconnect(simfleet):  # noqa: F811
    """sshd and its sessions die: the live boxes turn "reconnecting" (never judged idle while
    unseen); sshd returns: the same sessions are live again, history continued."""
    import asyncio
    import os
    import signal

    from tui.remote.fleet_pool import open_fleet

    from tests.support.sshd import SSHD
    fleet, _ = open_fleet(["busy", "idle1"], ssh_config=simfleet.ssh_config)
    fleet.start()
    try:
        assert await fleet.wait_settled(60)
        assert [r.state for r in fleet.rows()] == ["live", "live"]
        box = simfleet.box
        # this sshd's connection processes, found first; the probe daemons below them live on
        doomed = [p for p in descendants(box.proc.pid) if cmdline(p).startswith("sshd")]
        box.proc.kill()
        box.proc.wait()
        for pid in doomed:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for _ in range(100):
            if all(r.state == "reconnecting" for r in fleet.rows()):
                break
            await asyncio.sleep(0.1)
        rows = fleet.rows()
        assert [r.state for r in rows] == ["reconnecting", "reconnecting"], rows
        assert not any(r.burning for r in rows) and rows[0].reason
        seq_before = fleet.box("busy").state.seqs[-1]
        box.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(box.root / "sshd_config")],
                                    stdout=open(box.log, "ab"), stderr=subprocess.STDOUT)
        for _ in range(300):  # live again, and the daemon's samples since the drop arrived
            if (all(b.session_state == "live" and b.backlog_in for b in fleet.boxes)
                    and fleet.box("busy").state.seqs[-1] > seq_before):
                break
            await asyncio.sleep(0.1)
        assert [r.state for r in fleet.rows()] == ["live", "live"]
        assert [b.connects for b in fleet.boxes] == [2, 2]
        busy = fleet.box("busy").state.seqs
        assert busy[-1] > seq_before and busy == sorted(busy)  # the gap filled, in order
    finally:
        await fleet.close()
