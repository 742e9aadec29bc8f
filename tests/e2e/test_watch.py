"""The box keeps watch with the app closed (issue 21), end to end: real sshd, real tmux,
the real daemon; the GPU is the simulator. The app arms or configures, disconnects, and
what the daemon does alone is checked: progress read from a tqdm pane, one notification
at a loopback webhook when a job dies of CUDA OOM, "release when this job ends", a hung
NCCL job reported hung, autostop on MIG slices without utilization, and no secret in the
daemon's log, `status --json` or any reply but notify_config's redacted list."""

import asyncio
import json
import os
import shlex
import stat
import subprocess
import sys
import time

import pytest

from remote_probe import wire
from tests.support.webhook import TOKEN, USER_PASS
from tui.remote import session as session_mod
from tui.remote import ssh

pytestmark = pytest.mark.timeout(240)

def target(box):
    return ssh.Target.parse("testbox", ssh_config=box.ssh_config)


async def session(box, scenario):
    s = session_mod.RemoteSession(target(box), simulate=scenario, remote_dir=box.remote_dir)
    await s.open()
    return s


async def configure(s, urls, **watch):
    return await s.request(wire.NOTIFY_CONFIG, channels=urls, box="testbox", enabled=True,
                           quiet=None, templates={}, watch=watch or None)


async def watch_rows(box, scenario):
    s = await session(box, scenario)
    try:
        reply = await s.request(wire.SNAPSHOT)
    finally:
        await s.close()
    return reply["jobs"].get("watch") or []


async def wait_row(box, scenario, test, timeout):
    end = time.time() + timeout
    rows = []
    while time.time() < end:
        rows = await watch_rows(box, scenario)
        found = [r for r in rows if test(r)]
        if found:
            return found[0]
        await asyncio.sleep(1.0)
    raise AssertionError("no such job in %r" % rows)


def script(tmp_path, name, code):
    path = tmp_path / name
    path.write_text(code)
    return "%s %s" % (shlex.quote(sys.executable), shlex.quote(str(path)))


TQDM_JOB = r'''
import sys, time
from tqdm import tqdm
log = open(sys.argv[1], "a")
for i in tqdm(range(400), mininterval=0.2, ncols=100):
    time.sleep(0.1)
    log.write("%d %f\n" % (i + 1, time.time())); log.flush()
'''


async def test_tqdm_job_shows_fraction_and_eta_with_the_app_closed(sshbox, tmp_path):
    pytest.importorskip("tqdm")
    truth = tmp_path / "truth"
    s = await session(sshbox, "adopt")
    await s.request(wire.TMUX_NEW, name="train", cwd=str(tmp_path),
                    command=script(tmp_path, "job.py", TQDM_JOB) + " " + shlex.quote(str(truth))
                    + " GPUTUI_SIM_GPU_JOB")  # the simulator puts it on GPU 0
    await s.close()  # the laptop goes away
    await asyncio.sleep(10)
    row = await wait_row(sshbox, "adopt", lambda r: r["kind"] == "tmux" and r.get("progress")
                         and r["progress"]["fraction"] > 0.15, 60)
    p = row["progress"]
    assert row["state"] == "running" and row["name"].startswith("train:")
    steps = [tuple(map(float, line.split())) for line in truth.read_text().split("\n") if line]
    done_then = max(n for n, t in steps if t <= p["at"])
    assert p["fraction"] == pytest.approx(done_then / 400, rel=0.15)
    assert p["total"] == 400 and p["source"] == "tqdm"
    for _ in range(120):  # until the job's last step: the ETA's truth
        steps = [tuple(map(float, line.split())) for line in truth.read_text().split("\n") if line]
        if steps[-1][0] >= 400:
            break
        await asyncio.sleep(0.5)
    remaining = steps[-1][1] - p["at"]
    print("tqdm: fraction %.3f (truth %.3f), ETA %.1f s (truth %.1f s)"
          % (p["fraction"], done_then / 400, p["eta_seconds"], remaining))
    assert p["eta_seconds"] == pytest.approx(remaining, rel=0.15)


OOM_JOB = r'''
import sys, time
for i in range(8):
    print("epoch 1 step %d/100 loss 0.5" % i, flush=True)
    time.sleep(0.5)
sys.stderr.write("""Traceback (most recent call last):
  File "train.py", line 88, in <module>
    loss.backward()
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.35 GiB total capacity)
""")
open(sys.argv[1], "w").write(repr(time.time()))
sys.exit(1)
'''


async def test_cuda_oom_crash_gives_one_notification_and_no_secret_leaks(sshbox, tmp_path, receiver):
    crashed_at = tmp_path / "crashed_at"
    s = await session(sshbox, "idle")
    reply = await configure(s, [receiver.url, "nosuch://abcdef"])
    # the channel list comes back redacted; a bad URL is named without secrets
    assert reply["channels"] == ["json://****@127.0.0.1:%d/****" % receiver.port]
    assert len(reply["problems"]) == 1
    await s.request(wire.TMUX_NEW, name="bert-large", cwd=str(tmp_path),
                    command=script(tmp_path, "train.py", OOM_JOB) + " " + shlex.quote(str(crashed_at)))
    await s.close()
    end = time.time() + 60
    while time.time() < end and not receiver.hits:
        await asyncio.sleep(0.1)
    if not receiver.hits:
        with open("/tmp/watch2_debug.txt", "w") as f:
            f.write(open(os.path.join(sshbox.remote_dir, "daemon.log")).read()[-5000:])
            f.write(json.dumps(await watch_rows(sshbox, "idle"), indent=1))
    assert receiver.hits, "no notification"
    delay = receiver.hits[0][0] - float(crashed_at.read_text())
    print("crash -> notification: %.1f s" % delay)
    assert delay < 30
    await asyncio.sleep(12)  # more scans, more pumps: still one message
    msgs = receiver.messages()
    assert len(msgs) == 1, msgs
    msg = msgs[0]
    assert "bert-large" in msg["title"] and "CUDA out of memory" in msg["title"]
    assert "OutOfMemoryError" in msg["message"] and msg["type"] == "failure"
    assert receiver.hits[0][1] == "/hook/" + TOKEN  # it really went to the configured URL
    row = await wait_row(sshbox, "idle", lambda r: r["kind"] == "tmux", 10)
    assert row["state"] == "crashed" and row["cause"] == "cuda_oom"
    assert any("CUDA out of memory" in line for line in row["evidence"])

    # (e) the secret is nowhere it could leak: the log, status --json, any other reply
    log = open(os.path.join(sshbox.remote_dir, "daemon.log")).read()
    assert "notification crashed" in log
    assert "scan failed" not in log and "pump failed" not in log and "tick failed" not in log
    out = subprocess.run([sys.executable, "-m", "tui", "status", "testbox", "--json", "--simulate",
                          "idle", "--ssh-config", sshbox.ssh_config, "--remote-dir", sshbox.remote_dir],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    s = await session(sshbox, "idle")
    replies = [await s.request(wire.SNAPSHOT), await s.request(wire.AUTOSTOP_STATUS),
               await s.request(wire.NOTIFY_TEST)]
    await s.close()
    assert replies[2]["results"][0]["ok"] and "****" in replies[2]["results"][0]["channel"]
    for text in [log, out.stdout, out.stderr] + [json.dumps(r) for r in replies]:
        assert TOKEN not in text and USER_PASS not in text
    stored = os.path.join(sshbox.remote_dir, "notify", "channels.json")
    assert TOKEN in open(stored).read()  # kept on the box, for the box to send...
    assert stat.S_IMODE(os.stat(stored).st_mode) == 0o600  # ...readable by its owner only
    assert stat.S_IMODE(os.stat(os.path.dirname(stored)).st_mode) == 0o700


# Longer than the watch's scan period (CAPTURE_EVERY_S, 3 s): a job that starts and ends
# between two scans is never listed, so it cannot be armed for.
FINISH_JOB = r'''
import time
for i in range(16):
    print("step %d/16" % (i + 1), flush=True)
    time.sleep(0.5)
'''


async def test_release_when_the_job_ends_runs_the_release_command_once(sshbox, tmp_path):
    marker = tmp_path / "released"
    s = await session(sshbox, "idle")
    job = await s.request(wire.TMUX_NEW, name="short", cwd=str(tmp_path),
                          command=script(tmp_path, "short.py", FINISH_JOB))
    job_id = "tmux:" + job["pane"]
    for _ in range(20):
        reply = await s.request(wire.SNAPSHOT)
        if any(r["id"] == job_id for r in reply["jobs"].get("watch") or []):
            break
        await asyncio.sleep(0.3)
    else:
        raise AssertionError("the job never showed in the watch list: %r" % reply["jobs"].get("watch"))
    armed = await s.request(wire.AUTOSTOP_ARM, command="echo fired >> %s" % shlex.quote(str(marker)),
                            when_job_done=job_id, grace=1)
    assert armed["autostop"]["when_job_done"] == job_id
    await s.close()
    end = time.time() + 40
    while time.time() < end and not marker.exists():
        await asyncio.sleep(0.2)
    assert marker.exists(), "never released"
    await asyncio.sleep(6)
    assert marker.read_text() == "fired\n"  # once
    events = [json.loads(line) for line in open(os.path.join(sshbox.remote_dir, "autostop-events.jsonl"))]
    assert [e["reason"] for e in events if e["event"] == "fired"] == ["job_done"]


async def test_unknown_job_is_refused_for_release_when_done(sshbox):
    s = await session(sshbox, "idle")
    with pytest.raises(Exception, match="no job"):
        await s.request(wire.AUTOSTOP_ARM, command="true", when_job_done="tmux:%999", grace=1)
    await s.close()


async def test_hung_nccl_job_is_reported_hung(sshbox, tmp_path, receiver):
    s = await session(sshbox, "nccl-hung")
    await configure(s, [receiver.url], hung_after_s=4)
    await s.request(wire.TMUX_NEW, name="ddp",
                    command="exec python3 -c 'import time; time.sleep(300)' gputui-hung-job")
    await s.close()
    row = await wait_row(sshbox, "nccl-hung", lambda r: r["kind"] == "tmux" and r["state"] == "hung", 40)
    assert row["cause"] == "nccl_spin"
    assert "power" in row["evidence"][0]
    end = time.time() + 20
    while time.time() < end and not any(m["title"].startswith("ddp:") for m in receiver.messages()):
        await asyncio.sleep(0.2)
    hung = [m for m in receiver.messages() if m["title"].startswith("ddp:")]
    assert len(hung) == 1 and "hung" in hung[0]["title"]


async def test_mig_without_utilization_and_no_compute_process_is_released(sshbox, tmp_path):
    marker = tmp_path / "released"
    s = await session(sshbox, "mig-noutil")
    await s.request(wire.AUTOSTOP_ARM, command="touch %s" % shlex.quote(str(marker)),
                    idle_seconds=3, grace=1)
    await asyncio.sleep(1.5)
    status = (await s.request(wire.AUTOSTOP_STATUS))["autostop"]
    assert status["rule"] == "no_compute"
    await s.close()
    end = time.time() + 60  # idle window + grace + scans; slow on a loaded CI box
    while time.time() < end and not marker.exists():
        await asyncio.sleep(0.2)
    assert marker.exists()
