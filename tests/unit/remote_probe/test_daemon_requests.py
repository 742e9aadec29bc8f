"""The daemon's requests: served concurrently, always answered, never a reason to
drop the link or to replace another session's daemon."""

import asyncio
import hashlib
import os
import subprocess
import sys
import time

import pytest

from remote_probe import daemon as daemon_mod
from remote_probe import paths, server
from remote_probe import wire

from tests.support.sshd import REPO, stop_daemon
from tests.unit.remote_probe.wire.test_daemon import Attach, alive


@pytest.fixture
def state(tmp_path):
    yield tmp_path / "state"
    stop_daemon(str(tmp_path / "state"))


class EnvAttach(Attach):
    """`probe attach` with extra environment: the daemon it spawns inherits it."""

    def __init__(self, state_dir, env, simulate="idle"):
        argv = [sys.executable, "-m", "remote_probe", "attach", "--state-dir", str(state_dir),
                "--simulate", simulate]
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=REPO, **env))
        self.hello = self.read()


def slow_apt_get(tmp_path, seconds):
    """A real `apt-get` on the daemon's PATH that takes `seconds`: the real tmux install
    request, made as slow as apt on a slow mirror."""
    bin_dir = tmp_path / "slowbin"
    bin_dir.mkdir()
    script = bin_dir / "apt-get"
    script.write_text("#!/bin/sh\nsleep %d\necho 'slow fake apt-get: done'\n" % seconds)
    script.chmod(0o755)
    return {"PATH": "%s:%s" % (bin_dir, os.environ.get("PATH", ""))}


@pytest.mark.timeout(120)
def test_a_30_s_request_does_not_hold_up_pings_or_samples(state, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("tmux install runs only as root on the box")
    a = EnvAttach(state, slow_apt_get(tmp_path, 30))
    a.send({"type": "subscribe", "id": "sub", "since_seq": 0})
    a.read_until(lambda m: m.get("id") == "sub")
    t0 = time.monotonic()
    a.send({"type": "tmux_install", "id": "install"})
    worst, pings, samples, install = 0.0, 0, 0, None
    rid = 0
    while install is None and time.monotonic() - t0 < 60:
        rid += 1
        sent = time.monotonic()
        a.send({"type": "ping", "id": rid})
        while True:  # read until the ping's answer; samples and the install reply pass by
            msg = a.read()
            if msg["type"] == "sample":
                samples += 1
            elif msg.get("id") == "install":
                install = msg
            elif msg.get("id") == rid:
                break
        worst = max(worst, time.monotonic() - sent)
        pings += 1
        time.sleep(1.0)
    took = time.monotonic() - t0
    a.close()
    assert install is not None and install["type"] == "reply", install
    assert "slow fake apt-get: done" in install["output"]
    assert took >= 29  # it really was slow...
    # ...and the link never noticed: the session drops it after 20 s without a ping answer
    assert pings >= 25 and worst < 5.0, (pings, worst)
    assert samples >= 25


def test_every_request_is_answered_even_when_it_fails(state, tmp_path):
    fifo = tmp_path / "swapped.pt"
    os.mkfifo(fifo)
    a = Attach(state, simulate="idle")
    t0 = time.monotonic()
    a.send({"type": "sha256", "id": 1, "paths": [str(fifo)]})
    err = a.read_until(lambda m: m.get("id") == 1)
    assert err["type"] == "error" and "not a regular file" in err["error"]
    assert time.monotonic() - t0 < 10  # not the 600 s a blocked read would take
    a.send({"type": "sha256", "id": 2, "paths": [str(tmp_path / "gone.pt")]})
    assert "No such file" in a.read_until(lambda m: m.get("id") == 2)["error"]
    a.send({"type": "kill", "id": 3, "pid": {"not": "a pid"}})
    assert "kill.pid: expected an integer" in a.read_until(lambda m: m.get("id") == 3)["error"]
    a.send({"type": "kill", "id": 31, "pid": 1})
    assert "refusing to kill pid 1" in a.read_until(lambda m: m.get("id") == 31)["error"]
    a.send({"type": "checklist", "id": 4, "roots": "not a list"})
    assert "roots" in a.read_until(lambda m: m.get("id") == 4)["error"]
    a.send({"type": "tmux_capture", "id": 5, "pane": 7})
    assert "pane" in a.read_until(lambda m: m.get("id") == 5)["error"]
    a.send({"type": "ping", "id": {"a": [1, 2]}})  # an id that is not a scalar
    reply = a.read_until(lambda m: m["type"] == "reply" and "t" in m)
    assert reply["id"] is None
    a.send({"type": "ping", "id": 6})
    assert a.read_until(lambda m: m.get("id") == 6)["type"] == "reply"
    a.close()


def test_a_checklist_over_a_name_that_is_not_utf8_answers_and_the_name_maps_back(state, tmp_path):
    work = tmp_path / "work"
    (work / "checkpoints").mkdir(parents=True)
    raw = os.fsencode(str(work / "checkpoints")) + b"/epoch-\xff\xfe.pt"
    with open(raw, "wb") as f:
        f.write(b"weights" * 1000)
    a = Attach(state, simulate="idle")
    t0 = time.monotonic()
    a.send({"type": "checklist", "id": 1, "roots": [str(work)], "artifact_paths": [str(work)],
            "temp_dirs": [], "cache_dirs": []})
    reply = a.read_until(lambda m: m.get("id") == 1)
    assert reply["type"] == "reply" and time.monotonic() - t0 < 15
    paths = [f["path"] for f in reply["facts"]["artifacts"]["files"]]
    assert [os.fsencode(p) for p in paths] == [raw]
    a.send({"type": "sha256", "id": 2, "paths": paths})
    sums = a.read_until(lambda m: m.get("id") == 2)["sha256"]
    assert sums == {paths[0]: hashlib.sha256(b"weights" * 1000).hexdigest()}
    a.close()


def test_runtime_dir_is_the_same_in_every_process(tmp_path):
    deep = str(tmp_path / ("d" * 120))
    code = "import sys; from remote_probe.paths import runtime_dir; print(runtime_dir(sys.argv[1]))"
    seen = set()
    for seed in ("1", "2", "3"):
        out = subprocess.run([sys.executable, "-c", code, deep], stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, PYTHONPATH=REPO, PYTHONHASHSEED=seed), check=True)
        seen.add(out.stdout.strip())
    assert len(seen) == 1
    path = seen.pop()
    assert path.startswith("/tmp/gputui-%d-" % os.getuid())
    assert len(os.path.join(path, "probe.sock")) <= 100
    assert paths.runtime_dir(str(tmp_path)) == str(tmp_path / "run")  # short: in place


def test_a_long_state_dir_gets_a_daemon_and_keeps_it(tmp_path):
    deep = tmp_path / ("long-remote-dir-" * 8)
    try:
        a = Attach(deep, simulate="idle")
        pid = a.hello["pid"]
        a.close()
        b = Attach(deep, simulate="idle")
        assert b.hello["pid"] == pid  # found again, not a new one per try
        b.close()
    finally:
        stop_daemon(str(deep))
    assert not alive(pid)


def test_another_setting_does_not_replace_a_daemon_a_live_session_uses(state):
    a = Attach(state, simulate="idle")
    a.send({"type": "subscribe", "id": 1, "since_seq": 0})
    a.read_until(lambda m: m.get("id") == 1)
    b = Attach(state, simulate="idle")
    assert b.hello["sessions"] == 1
    b.send({"type": "shutdown", "id": "attach", "only_if_unused": True})
    err = b.read_until(lambda m: m.get("id") == "attach")
    assert err["type"] == "error" and err["in_use"] == 1
    assert "1 other live session" in err["error"] and "left running" in err["error"]
    b.close()
    seq = a.read_until(lambda m: m["type"] == "sample")["seq"]
    assert a.read_until(lambda m: m["type"] == "sample")["seq"] == seq + 1  # undisturbed
    a.close()
    # with nobody subscribed the same request does stop it (a version upgrade)
    c = Attach(state, simulate="idle")
    c.send({"type": "shutdown", "id": "attach", "only_if_unused": True})
    assert c.read_until(lambda m: m.get("id") == "attach")["stopping"]
    c.close()


def test_two_settings_on_one_box_refuse_instead_of_replacing_each_other(state):
    from remote_probe import attach
    if not hasattr(attach, "DaemonInUse"):
        pytest.skip("attach.py without the refuse-when-in-use change (see the daemon branch report)")
    a = Attach(state, simulate="idle")
    pid = a.hello["pid"]
    a.send({"type": "subscribe", "id": 1, "since_seq": 0})
    a.read_until(lambda m: m.get("id") == 1)
    t0 = time.monotonic()
    b = subprocess.run([sys.executable, "-m", "remote_probe", "attach", "--state-dir", str(state),
                        "--simulate", "a100x2"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=REPO), timeout=30)
    assert b.returncode == wire.EXIT_DAEMON_IN_USE
    assert b"runs sim:idle" in b.stderr and b"1 other live session" in b.stderr
    said = wire.decode(b.stdout)  # the client reads why, even over a terminal transport
    assert said["type"] == "error" and said["exit"] == wire.EXIT_DAEMON_IN_USE
    assert "left running" in said["error"]
    assert time.monotonic() - t0 < 8  # told at once, not after a 10 s spawn wait
    assert alive(pid)
    seq = a.read_until(lambda m: m["type"] == "sample")["seq"]
    assert a.read_until(lambda m: m["type"] == "sample")["seq"] == seq + 1
    a.close()
    # once the session is gone, the other settings do replace it (an upgrade)
    c = Attach(state, simulate="a100x2")
    assert c.hello["pid"] != pid and c.hello["config"]["backend"] == "sim:a100x2"
    c.close()


# ---------------------------------------------------------------- in process
@pytest.fixture
async def served(tmp_path):
    """A Daemon in this process on a real unix socket (no sampling loop)."""
    d = daemon_mod.Daemon(str(tmp_path), simulate="idle")
    d.stop_event = asyncio.Event()
    sock = str(tmp_path / "t.sock")
    server = await asyncio.start_unix_server(d.server.handle_client, path=sock, limit=wire.MAX_LINE)
    yield d, sock
    for client in list(d.server.clients):
        client.writer.close()
    await asyncio.sleep(0.05)
    server.close()
    d.backend.close()
    for pool in (d.pool, d.tmux_pool, d.install_pool):
        pool.shutdown(wait=False)


async def test_a_client_leaving_cancels_its_requests_in_flight(served):
    d, sock = served
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def slow(client, msg):  # a test-only handler in the real table
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
    d.server.handlers[wire.PREFLIGHT] = slow  # unknown kinds never reach the table
    reader, writer = await asyncio.open_unix_connection(sock)
    await reader.readline()  # hello
    writer.write(wire.encode({"type": wire.PREFLIGHT, "id": 1}))
    writer.write(wire.encode({"type": "ping", "id": 2}))
    reply = wire.decode(await asyncio.wait_for(reader.readline(), 5))
    assert reply["id"] == 2  # answered while 1 is still running
    await asyncio.wait_for(started.wait(), 5)
    client = next(iter(d.server.clients))
    assert len(client.tasks) == 1
    writer.close()
    await asyncio.wait_for(cancelled.wait(), 5)
    assert not d.server.clients


async def test_a_handler_bug_becomes_an_error_reply(served):
    d, sock = served

    async def broken(client, msg):
        return {"x": 1 / 0}

    async def unsendable(client, msg):
        return {"blob": b"bytes are not JSON"}
    d.server.handlers.update({wire.ENV_CAPTURE: broken, wire.RELEASE: unsendable})
    reader, writer = await asyncio.open_unix_connection(sock)
    await reader.readline()
    errors = []
    for rid, kind in ((1, wire.ENV_CAPTURE), (2, wire.RELEASE)):
        writer.write(wire.encode({"type": kind, "id": rid}))
        reply = wire.decode(await asyncio.wait_for(reader.readline(), 5))
        assert reply["type"] == "error" and reply["id"] == rid
        errors.append(reply["error"])
    assert "env_capture failed on the box: ZeroDivisionError" in errors[0]
    assert errors[1].startswith("could not send the answer")
    writer.close()


async def test_too_many_requests_in_flight_are_refused_not_queued(served):
    d, sock = served
    gate = asyncio.Event()

    async def wait(client, msg):
        await gate.wait()
        return {}
    d.server.handlers[wire.AUTOSTOP_STATUS] = wait
    reader, writer = await asyncio.open_unix_connection(sock)
    await reader.readline()
    for rid in range(server.MAX_IN_FLIGHT + 1):
        writer.write(wire.encode({"type": wire.AUTOSTOP_STATUS, "id": rid}))
    refused = wire.decode(await asyncio.wait_for(reader.readline(), 5))
    assert refused["id"] == server.MAX_IN_FLIGHT and "in flight" in refused["error"]
    gate.set()
    answered = {wire.decode(await asyncio.wait_for(reader.readline(), 5))["id"]
                for _ in range(server.MAX_IN_FLIGHT)}
    assert answered == set(range(server.MAX_IN_FLIGHT))
    writer.close()


def test_known_pids_per_client_stay_the_size_of_one_sample(tmp_path):
    d = daemon_mod.Daemon(str(tmp_path), simulate="idle")
    try:
        client = server.Client(None, None)
        d.server.send = lambda *a, **k: None
        for tick in range(50):
            d.send_meta(client, list(range(tick * 1000, tick * 1000 + 300)))
        assert len(client.known_pids) == 300
    finally:
        d.backend.close()


def test_hashing_threads_run_at_the_lowest_priority_and_leave_the_rest_alone():
    """The daemon's bulk pool (a checkpoint's sha256 for a download) runs at nice 19 so the
    user's training and its dataloader workers go first; the sampling thread keeps its priority."""
    import concurrent.futures
    import threading

    def nice_of_this_thread():
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    before = nice_of_this_thread()
    with concurrent.futures.ThreadPoolExecutor(1, initializer=daemon_mod.lower_thread_priority) as pool:
        assert pool.submit(nice_of_this_thread).result() == 19
    with concurrent.futures.ThreadPoolExecutor(1) as other:
        assert other.submit(nice_of_this_thread).result() == before
    assert nice_of_this_thread() == before


def test_a_killed_job_is_gone_from_the_very_next_sample(state, tmp_path):
    """The checklist's kill (k) of a job left running outside tmux: the jobs scan runs before
    the reply, so the first sample after it no longer lists the job; it used to stay up to a
    scan later and look unkilled."""
    script = tmp_path / "preprocess.py"
    script.write_text("import time\nwhile True:\n    time.sleep(1)\n")
    # orphaned, as a job a user left running is: a python under another python (this test)
    # would count as that one's worker, not a job of its own
    out = subprocess.run(["sh", "-c", "nohup %s %s >/dev/null 2>&1 & echo $!" % (sys.executable, script)],
                         cwd=str(tmp_path), stdout=subprocess.PIPE, text=True, check=True,
                         start_new_session=True)
    pid = int(out.stdout)
    a = Attach(state, simulate="idle")
    a.send({"type": "subscribe", "id": 1, "since_seq": 0})
    try:
        def listed(msg):  # the job, outside tmux and alive, in a sample's jobs scan (what the
            jobs = msg.get("jobs") if msg.get("type") == "sample" else None  # checklist fails on)
            return jobs is not None and any(j.get("pid") == pid and j.get("state") not in ("finished", "crashed")
                                            for j in jobs.get("watch") or [])
        a.read_until(listed, limit=60)  # detached: a job after protection.DETACHED_AFTER
        a.send({"type": "kill", "id": 7, "pid": pid})
        assert a.read_until(lambda m: m.get("id") == 7, limit=30)["result"] == "terminated"
        # the jobs ride on the next sample (or the one after, if one was on its way), not on
        # the periodic scan's up to JOBS_EVERY samples later
        samples = [a.read_until(lambda m: m.get("type") == "sample", limit=10) for _ in range(2)]
        with_jobs = [m for m in samples if "jobs" in m]
        assert with_jobs, "no jobs scan in the two samples after the kill"
        assert not listed(with_jobs[0]), with_jobs[0]["jobs"]["watch"]
    finally:
        a.close()
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass


WITH_WORKERS = """
import subprocess, sys, time
n = int(sys.argv[1])
# stand-ins for DataLoader workers: processes whose program is python (argv[0]), children of the job
kids = [subprocess.Popen(["bash", "-c", "exec -a python3 sleep 600"]) for _ in range(n)]
print("ready", flush=True)
time.sleep(600)
"""


def test_a_job_started_after_one_with_many_workers_is_still_watched(state, tmp_path):
    """A root box lists every python: the watch list holds MAX_WATCH_JOBS jobs, and a job's
    DataLoader workers used to take those places before they were known as workers, so the job
    started next was never watched (nor its crash told)."""
    big, later = tmp_path / "train_big.py", tmp_path / "preprocess_later.py"
    big.write_text(WITH_WORKERS)
    later.write_text("import time\ntime.sleep(600)\n")
    n = wire.MAX_WATCH_JOBS + 6
    pids = []
    try:
        for script, args in ((big, [str(n)]), (later, [])):
            out = subprocess.run(["sh", "-c", "nohup %s %s %s >%s.out 2>&1 & echo $!"
                                  % (sys.executable, script, " ".join(args), script)],
                                 cwd=str(tmp_path), stdout=subprocess.PIPE, text=True, check=True,
                                 start_new_session=True)
            pids.append(int(out.stdout))
            if script is big:  # all the workers exist before the later job starts
                deadline = time.time() + 30
                while "ready" not in (tmp_path / "train_big.py.out").read_text():
                    assert time.time() < deadline, "the workers did not start"
                    time.sleep(0.1)
        a = Attach(state, simulate="idle")
        a.send({"type": "subscribe", "id": 1, "since_seq": 0})
        try:
            def both(msg):
                jobs = msg.get("jobs") if msg.get("type") == "sample" else None
                watched = set(j.get("pid") for j in (jobs or {}).get("watch") or [])
                return set(pids) <= watched
            msg = a.read_until(both, limit=60)
            names = [j["name"] for j in msg["jobs"]["watch"]]
            assert not any(name.startswith("python3 600") for name in names), names  # no worker is a job
        finally:
            a.close()
    finally:
        for pid in pids:
            try:
                os.killpg(os.getpgid(pid), 9)
            except (ProcessLookupError, PermissionError):
                pass


# A process shaped like a command typed in an SSH session: on a terminal, under a parent whose
# name is sshd's (the protection verdict reads names and terminals from /proc, nothing else).
SSH_SHAPED = r"""
import ctypes, os, pty, sys, time
ctypes.CDLL(None).prctl(15, b"sshd: u@pts/9", 0, 0, 0)
pid, fd = pty.fork()
if pid == 0:
    os.execvp("sleep", ["sleep", "300"])
print(pid, flush=True)
try:
    sys.stdin.read()
finally:
    os.kill(pid, 9)
"""


@pytest.mark.parametrize("how", ["rescan", "snapshot", "autostop_arm"])
def test_a_host_pid_that_equals_a_local_pid_is_not_taken_for_that_local_process(tmp_path, how):
    """A container-shaped box: the driver reports a training job by its host pid, and that
    number is also the pid of an unrelated process in the container (here a `sleep` typed in
    an SSH session). No jobs scan — the periodic one, the rescan after a tmux action or a
    kill, a snapshot (`gputui status`), arming autostop on a job — may report the sleep as a
    GPU job that dies with the connection; the rescan and the snapshot did."""
    session = subprocess.Popen([sys.executable, "-c", SSH_SHAPED], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    local_pid = int(session.stdout.readline())
    deadline = time.time() + 10
    while time.time() < deadline:  # exec'd and on its terminal, as a typed command is
        comm, rest = open("/proc/%d/stat" % local_pid).read().split(" (", 1)[1].rsplit(")", 1)
        if comm == "sleep" and int(rest.split()[4]) != 0:  # tty_nr
            break
        time.sleep(0.02)
    d = daemon_mod.Daemon(str(tmp_path), simulate="idle")
    try:
        def row(local):
            return wire.proc_row({"pid": local_pid, "gpu": 0, "gpu_mem": 20 << 30, "local": local})
        d.latest = {"type": wire.SAMPLE, "seq": 1, "procs": [row(0)], "gpus": [], "host": {}}
        from remote_probe import handlers
        if how == "rescan":
            d.rescan_jobs()
            jobs = d.jobs
        elif how == "snapshot":
            jobs = asyncio.run(handlers.on_snapshot(d, None, {}))["jobs"]
        else:
            with pytest.raises(server.RequestError):  # no such job: refused after the scan
                asyncio.run(handlers.on_autostop_arm(d, None, {"command": "true", "when_job_done": "nope"}))
            jobs = d.jobs
        assert [j for j in jobs["unprotected"] if j["pid"] == local_pid and j["gpu"]] == []
        # the same pid as this container's own is the GPU job it says it is
        d.latest["procs"] = [row(1)]
        d.rescan_jobs()
        assert [(j["gpu"], j["reason"]) for j in d.jobs["unprotected"] if j["pid"] == local_pid] == [
            (True, "will die if this SSH connection drops")]
    finally:
        session.stdin.close()
        session.wait()
        d.backend.close()
