"""End to end through a real sshd and real tmux (issue 21, laptop side against helper watch2's
daemon): a tmux job printing tqdm lines shows up in `gputui status --json` with its state,
progress fraction, an ETA within 15 % of the truth and the cost to finish at the box's rate;
`status` sends the user's channels as notify_config first, and the webhook key appears in no
output and no daemon log."""

import asyncio
import json
import os
import subprocess
import sys
import time

import pytest

from remote_probe import wire
from tui.core.config import Config
from tui.remote import session as session_mod
from tui.remote import ssh

from tests.support.watch_canned import TOKEN

pytestmark = pytest.mark.timeout(240)

N, RATE = 3000, 20.0  # 150 s of tqdm-like output at 20 it/s
JOB = ("import sys, time\n"
       "n, r, t0 = %d, %.1f, time.time()\n"
       "for i in range(n):\n"
       "    el = time.time() - t0; left = (n - i) / r\n"
       "    sys.stdout.write('\\r%%3d%%%%|#####     | %%d/%%d [%%02d:%%02d<%%02d:%%02d, %%.2fit/s]' %% (\n"
       "        100 * i // n, i, n, el // 60, el %% 60, left // 60, left %% 60, r))\n"
       "    sys.stdout.flush(); time.sleep(1 / r)\n") % (N, RATE)


def write_config(box):
    path = Config.load().path  # the isolated config dir (conftest)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write('[notify]\nurls = ["json://gputui:%s@127.0.0.1:9/hook"]\n\n'
                '[hosts.testbox]\nrate = 36.0\ncurrency = "USD"\n' % TOKEN)


def status(box):
    return subprocess.run([sys.executable, "-m", "tui", "status", "testbox", "--json", "--simulate",
                           "a100x2", "--ssh-config", box.ssh_config, "--remote-dir", box.remote_dir],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=90,
                          stdin=subprocess.DEVNULL)


async def test_status_json_shows_a_tqdm_jobs_progress_eta_and_cost(sshbox, tmp_path):
    write_config(sshbox)
    script = tmp_path / "job.py"
    script.write_text(JOB)
    target = ssh.Target.parse("testbox", ssh_config=sshbox.ssh_config)
    s = session_mod.RemoteSession(target, simulate="a100x2", remote_dir=sshbox.remote_dir)
    await s.open()
    t0 = time.time()
    reply = await s.request(wire.TMUX_NEW, name="tqdm job", command="exec python3 %s" % script)
    pane = reply.get("pane")
    await s.close()
    doc = None
    for _attempt in range(8):  # the daemon captures panes every few seconds
        await asyncio.sleep(3)
        r = status(sshbox)
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        jobs = [j for j in doc["jobs"] if j["pane"] == pane and (j.get("progress") or {}).get("fraction")]
        if jobs and jobs[0]["eta_seconds"] is not None:
            break
    else:
        pytest.fail("no progress for the tqdm job: %s" % json.dumps(doc and doc["jobs"]))
    seen = time.time()
    job = jobs[0]
    # no GPU use: "waiting" by the box's rule, its progress counted all the same
    assert job["state"] in ("running", "waiting") and job["kind"] == "tmux" and job["id"].startswith("tmux:")
    truth = N / RATE - (seen - t0)
    assert abs(job["eta_seconds"] - truth) <= 0.15 * truth, (job["eta_seconds"], truth)
    frac_truth = (seen - t0) * RATE / N
    assert abs(job["progress"]["fraction"] - frac_truth) <= 0.15, (job["progress"], frac_truth)
    assert job["cost_to_finish"] == pytest.approx(job["eta_seconds"] / 3600 * 36.0, rel=0.02)
    # the secret went to the box (notify_config) and nowhere else
    assert TOKEN not in r.stdout and TOKEN not in r.stderr
    for root, _dirs, files in os.walk(sshbox.remote_dir):
        for name in files:
            path = os.path.join(root, name)
            if name.endswith(".log"):
                with open(path, errors="replace") as f:
                    assert TOKEN not in f.read(), path
    text = subprocess.run([sys.executable, "-m", "tui", "status", "testbox", "--simulate", "a100x2",
                           "--ssh-config", sshbox.ssh_config, "--remote-dir", sshbox.remote_dir],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=90,
                          stdin=subprocess.DEVNULL)
    assert "watched job" in text.stdout and "to finish" in text.stdout, text.stdout
    assert TOKEN not in text.stdout + text.stderr
