"""A hang that utilization cannot fool (issue 36), end to end with the app closed: real sshd,
real tmux, the real daemon and a real job; the GPU is the simulator, which keeps utilization at
~100 % throughout and drops its power to idle once the job "hangs" (the NCCL way). The job goes
on writing a heartbeat to its log, so neither utilization nor output shows the hang; its progress
bar stopping does, long before the GPU signature's window."""

import asyncio
import json
import shlex
import time

import pytest

from tests.e2e.test_watch import configure, script, session, wait_row

pytestmark = pytest.mark.timeout(240)

STALL_JOB = r'''
import os, sys, time
from tqdm import tqdm
marker, log = sys.argv[1], open(sys.argv[2], "a")
bar = tqdm(total=1000, mininterval=0.2, ncols=100)
for i in range(40):
    time.sleep(0.4)
    bar.update(1)
open(marker, "w").close()          # the collective never returns: the GPU spins at idle power
while True:                        # ...while a logging thread keeps writing
    log.write("heartbeat %f\n" % time.time()); log.flush()
    time.sleep(0.5)
'''


async def test_progress_that_stopped_at_idle_power_is_hung_and_told_once(sshbox, tmp_path, receiver):
    pytest.importorskip("tqdm")
    marker = tmp_path / "hang"
    scenario = tmp_path / "stall.json"
    scenario.write_text(json.dumps({
        "description": "1 GPU whose job hangs in a collective halfway",
        "gpus": [{"name": "NVIDIA H100 80GB HBM3", "power_limit": 700, "load": {"kind": "steady", "level": 97},
                  "spin_marker": str(marker)}],
        "adopt": [{"match": "gputui-stall-job", "gpu": 0, "gpu_mem": 30000}]}))
    s = await session(sshbox, str(scenario))
    # the GPU signature alone would wait 10 min; the stall floor is made short for the test
    await configure(s, [receiver.url], hung_after_s=600, stall_min_s=5)
    await s.request("tmux_new", name="ddp", cwd=str(tmp_path),
                    command=script(tmp_path, "job.py", STALL_JOB) + " %s %s gputui-stall-job"
                    % (shlex.quote(str(marker)), shlex.quote(str(tmp_path / "log"))))
    await s.close()  # the laptop goes away
    end = time.time() + 60
    while not marker.exists() and time.time() < end:
        await asyncio.sleep(0.2)
    assert marker.exists(), "the job never got to its hang"
    hung_at = marker.stat().st_mtime
    row = await wait_row(sshbox, str(scenario), lambda r: r["kind"] == "tmux" and r["state"] == "hung", 120)
    assert row["cause"] == "progress_stalled", row
    assert row["evidence"][0].startswith("no new step for"), row["evidence"]
    assert row["stuck"] and row["stuck"][0]["gpu"] == 0 and row["stuck"][0]["how"] == "spinning"
    end = time.time() + 30
    while time.time() < end and not any(m["title"].startswith("ddp:") for m in receiver.messages()):
        await asyncio.sleep(0.2)
    told = time.time()
    hung = [m for m in receiver.messages() if m["title"].startswith("ddp:")]
    assert len(hung) == 1 and "hung" in hung[0]["title"], receiver.messages()
    assert "no new step for" in hung[0]["message"] and "GPU 0" in hung[0]["message"]
    print("progress stall: hang -> message %.1f s (GPU signature window 600 s)" % (told - hung_at))
    await asyncio.sleep(8)  # one message per hang, not one per scan
    assert len([m for m in receiver.messages() if m["title"].startswith("ddp:")]) == 1
