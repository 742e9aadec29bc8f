"""The cause of a crash in the message (issue 36), end to end with the app closed: real sshd,
real tmux, a real job killed with SIGKILL the way the OOM killer kills. The message says
"killed (out of memory?)", not "finished", with the job's run time and what it cost so far."""

import asyncio
import time

import pytest

from remote_probe import wire
from tests.e2e.test_watch import configure, script, session, wait_row

pytestmark = pytest.mark.timeout(240)

JOB = r'''
import os, sys, time
open(sys.argv[1], "w").write(str(os.getpid()))
for i in range(1000):
    print("epoch 1 step %d/1000 loss 0.5" % i, flush=True)
    time.sleep(0.5)
'''


async def test_a_sigkilled_job_is_killed_out_of_memory_with_its_cost_not_finished(sshbox, tmp_path, receiver):
    pidfile = tmp_path / "pid"
    s = await session(sshbox, "idle")
    await configure(s, [receiver.url])
    # the laptop's billing facts (what the app pushes after each connect): $3.60/h
    await s.request(wire.NOTIFY_BILLING, rate_per_hour=3.6, currency="USD", granularity="second",
                    start=time.time() - 600)
    await s.request(wire.TMUX_NEW, name="train", cwd=str(tmp_path),
                    command=script(tmp_path, "job.py", JOB) + " " + str(pidfile))
    await s.close()  # the laptop goes away
    await wait_row(sshbox, "idle", lambda r: r["kind"] == "tmux" and r["state"] in ("running", "waiting"), 60)
    await asyncio.sleep(20)  # longer than a scan and than MIN_NEWS_S: a real run
    import os
    import signal
    os.kill(int(pidfile.read_text()), signal.SIGKILL)
    killed_at = time.time()
    end = time.time() + 40
    while time.time() < end and not receiver.messages():
        await asyncio.sleep(0.2)
    told = time.time()
    msgs = receiver.messages()
    assert len(msgs) == 1, msgs
    msg = msgs[0]
    assert "train" in msg["title"] and "killed (out of memory?)" in msg["title"], msg
    assert "finished" not in msg["title"]
    assert "SIGKILL" in msg["message"] and "$" in msg["message"] and "so far" in msg["message"], msg
    row = await wait_row(sshbox, "idle", lambda r: r["kind"] == "tmux" and r["state"] == "crashed", 10)
    assert row["cause"] in ("sigkill", "oom_killed")  # oom_killed only where the kernel said so
    print("SIGKILL -> message %.1f s" % (told - killed_at))
