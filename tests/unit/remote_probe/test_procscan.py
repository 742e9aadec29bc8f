"""One /proc pass per jobs scan, shared by python jobs, ancestry, dataloader workers and
tmux start times; command lines cached by (pid, start time, comm)."""

import collections
import os

import pytest

from remote_probe import dataloader, procfs
from remote_probe.watch import protection


def stat_line(pid, comm, ppid, tty=0, start=1000, state="S"):
    rest = [state, ppid, pid, pid, tty, -1, 0, 0, 0, 0, 0, 7, 3, 0, 0, 20, 0, 1, 0, start, 0, 250]
    return "%d (%s) %s\n" % (pid, comm, " ".join(str(x) for x in rest))


def fake_proc(root, procs, btime=1_700_000_000):
    """A /proc with the given processes: {pid: (comm, ppid, tty, cmdline, sigign, start)}."""
    (root / "stat").write_text("cpu 1 2 3 4\nbtime %d\n" % btime)
    for pid, (comm, ppid, tty, cmd, sigign, start) in procs.items():
        d = root / str(pid)
        d.mkdir(exist_ok=True)
        (d / "stat").write_text(stat_line(pid, comm, ppid, tty, start))
        (d / "cmdline").write_text("\0".join(cmd.split()) + "\0")
        (d / "status").write_text("Name:\t%s\nUid:\t0\t0\t0\t0\nSigIgn:\t%016x\n" % (comm, sigign))
    return str(root)


BOX = {
    10: ("sshd", 1, 0, "sshd: root@pts/0", 0, 100),
    20: ("bash", 10, 34816, "-bash", 0, 200),
    30: ("python", 20, 34816, "python train.py data.paths=[/data/a,/data/b]", 0, 300),
    31: ("pt_data_worker", 30, 34816, "python train.py data.paths=[/data/a,/data/b]", 0, 310),
    40: ("tmux: server", 1, 0, "tmux new -s job", 0, 400),
    41: ("python", 40, 34817, "python safe.py", 0, 410),
    50: ("python", 20, 34816, "python nohup.py", 1, 500),  # SIGHUP ignored
}


def test_one_pass_answers_jobs_ancestry_and_workers(tmp_path):
    proc = fake_proc(tmp_path, BOX)
    scan = procfs.ProcScan(proc)
    now = 1_700_000_000 + 100000
    assert protection.python_jobs(now=now, scan=scan) == [30, 31, 41, 50]
    assert [c[1] for c in protection.ancestry(30, scan=scan)] == ["python", "bash", "sshd"]
    jobs = protection.unprotected_jobs([30], scan=scan)
    assert [(j["pid"], j["gpu"], j["reason"]) for j in jobs] == [
        (30, True, "will die if this SSH connection drops"),
        (31, False, "will die if this SSH connection drops")]
    assert jobs[0]["cmd"] == "python train.py data.paths=[/data/a,/data/b]"
    trainers, orphans = dataloader.find_workers(scan=scan)
    assert trainers == {30: [31]} and orphans == []
    assert scan.start(41) == 1_700_000_000 + 410 / procfs.CLK_TCK


def count_reads(monkeypatch):
    """A Counter of the /proc files read from now on, by path."""
    reads = collections.Counter()
    real = procfs.read_text

    def counting(path, default=""):
        reads[path] += 1
        return real(path, default)
    monkeypatch.setattr(procfs.processes, "read_text", counting)  # where ProcScan reads
    return reads


def test_every_stat_file_is_read_once_per_scan(tmp_path, monkeypatch):
    proc = fake_proc(tmp_path, BOX)
    reads = count_reads(monkeypatch)
    scan = procfs.ProcScan(proc, cache={})
    protection.unprotected_jobs([30], scan=scan)
    dataloader.find_workers(scan=scan)
    dataloader.LoaderWatch().scan(scan)
    stat_reads = {p: n for p, n in reads.items()
                  if p.startswith(proc + "/") and p.endswith("/stat") and p != proc + "/stat"}
    assert len(stat_reads) == len(BOX) and set(stat_reads.values()) == {1}
    assert max(n for p, n in reads.items() if p.endswith("/cmdline")) == 1


def test_command_lines_are_cached_until_the_process_changes(tmp_path):
    proc = fake_proc(tmp_path, BOX)
    cache = {}
    assert procfs.ProcScan(proc, cache).cmdline(30).startswith("python train.py")
    (tmp_path / "30" / "cmdline").write_text("changed\0")
    assert procfs.ProcScan(proc, cache).cmdline(30).startswith("python train.py")  # cached
    # exec: same pid and start time, another comm -> read again
    (tmp_path / "30" / "stat").write_text(stat_line(30, "torchrun", 20, 34816, 300))
    assert procfs.ProcScan(proc, cache).cmdline(30) == "changed"
    # pid reuse: another start time -> read again
    (tmp_path / "30" / "cmdline").write_text("reused\0")
    (tmp_path / "30" / "stat").write_text(stat_line(30, "torchrun", 20, 34816, 999))
    assert procfs.ProcScan(proc, cache).cmdline(30) == "reused"
    # a process that is gone leaves the cache
    for name in os.listdir(tmp_path / "31"):
        os.unlink(tmp_path / "31" / name)
    os.rmdir(tmp_path / "31")
    procfs.ProcScan(proc, cache)
    assert 31 not in cache


def test_the_real_proc_scan_sees_this_process():
    scan = procfs.ProcScan()
    me = os.getpid()
    assert scan.ppid(me) == os.getppid() and scan.comm(me).startswith(("python", "pytest"))
    assert "pytest" in scan.cmdline(me) or "python" in scan.cmdline(me)
    assert scan.uid(me) == os.getuid()


def test_dataloaders_of_a_neighbour_or_another_simulated_box_are_not_listed(tmp_path, monkeypatch):
    """A shared box: another user's DataLoader is theirs, not a job of this user to diagnose; a
    simulated box (the demo runs on the laptop itself) lists only what was started inside it."""
    from remote_probe.watch.scope import SCOPE_VAR
    procs = dict(BOX)
    procs[60] = ("python", 1, 0, "python theirs.py", 0, 600)
    procs[61] = ("pt_data_worker", 60, 0, "python theirs.py", 0, 610)
    procs[70] = ("pt_data_worker", 1, 0, "python lost.py", 0, 700)  # an orphan of the neighbour
    proc = fake_proc(tmp_path, procs)
    for pid in (60, 61, 70):
        (tmp_path / str(pid) / "status").write_text("Name:\tpython\nUid:\t1001\t1001\t1001\t1001\n")
    monkeypatch.setattr(os, "getuid", lambda: 1000)
    for pid in (20, 30, 31, 41, 50):
        (tmp_path / str(pid) / "status").write_text("Name:\tpython\nUid:\t1000\t1000\t1000\t1000\n")
    assert dataloader.find_workers(scan=procfs.ProcScan(proc)) == ({30: [31]}, [])
    monkeypatch.setattr(os, "getuid", lambda: 0)  # root watches every user's
    assert dataloader.find_workers(scan=procfs.ProcScan(proc)) == ({30: [31], 60: [61]}, [70])
    # a simulated box: only its own scope, root or not (the laptop's programs are not the box's)
    (tmp_path / "60" / "environ").write_bytes(b"HOME=/x\0%s=/box/a\0" % SCOPE_VAR.encode())
    monkeypatch.setenv(SCOPE_VAR, "/box/a")
    assert dataloader.find_workers(scan=procfs.ProcScan(proc)) == ({60: [61]}, [])
    assert protection.python_jobs(now=1_700_000_000 + 100000, scan=procfs.ProcScan(proc)) == [60]


def test_the_last_look_before_a_release_sees_only_the_box_own_tmux_jobs(tmp_path, monkeypatch):
    """Autostop's last look for a job started just before the release (box_watch) counted
    every new tmux job on the machine as root: a simulated box next to other boxes (the demo
    beside the user's own tmux, the suite's boxes) never fired. It follows watch_scope now."""
    import types

    from remote_probe.watch import box_watch
    from remote_probe.watch.scope import SCOPE_VAR
    procs = dict(BOX)
    procs[80] = ("tmux: server", 1, 0, "tmux -L other", 0, 800)
    procs[81] = ("python", 80, 34818, "python neighbour.py", 0, 9000)  # newest, another box's
    proc = fake_proc(tmp_path, procs)
    (tmp_path / "41" / "environ").write_bytes(b"%s=/box/a\0" % SCOPE_VAR.encode())
    (tmp_path / "81" / "environ").write_bytes(b"%s=/box/b\0" % SCOPE_VAR.encode())
    real = procfs.ProcScan
    start_of = real(proc).start
    monkeypatch.setattr(box_watch.procfs, "ProcScan", lambda *a: real(proc))
    monkeypatch.setattr(os, "getuid", lambda: 0)
    me = types.SimpleNamespace(jobs=types.SimpleNamespace(newest_start=lambda: None))
    assert box_watch.BoxWatch.newest_job_start(me) == start_of(81)  # a real box: root sees all
    monkeypatch.setenv(SCOPE_VAR, "/box/a")
    assert box_watch.BoxWatch.newest_job_start(me) == start_of(41)  # box a: its own job only


@pytest.mark.parametrize("cmdline,system", [
    ("/usr/bin/python3 /usr/bin/networkd-dispatcher --run-startup-triggers", True),
    ("/usr/bin/python3 /usr/share/unattended-upgrades/unattended-upgrade-shutdown --wait-for-signal", True),
    ("/usr/bin/python3 -s /usr/sbin/some-daemon", True),
    ("/usr/bin/python3 train.py --bs 64", False),
    ("/opt/conda/bin/python /root/code/train.py", False),
    ("python3 -m torch.distributed.run --nproc 8 train.py", False),
    ("python3 -u /usr/local/bin/train", False),  # the user's own install location
    ("python3", False),
])
def test_os_services_written_in_python_are_not_jobs(cmdline, system):
    assert protection.system_script(cmdline) is system


def test_servers_are_not_watched_as_jobs_but_a_kernel_and_a_script_are(tmp_path, monkeypatch):
    """JupyterLab or TensorBoard left up is no job: the dashboard's Jobs panel listed it as a
    waiting job (and its stopping as an ended one) while the checklist rightly ignored it."""
    from remote_probe.watch.loop import JobWatch
    procs = {
        1: ("systemd", 0, 0, "/sbin/init", 0, 1),
        60: ("python", 1, 0, "/opt/conda/bin/python /opt/conda/bin/jupyter-lab --port 8888", 1, 600),
        61: ("python", 1, 0, "/usr/bin/python3 -m tensorboard.main --logdir runs", 1, 610),
        62: ("python", 60, 0, "/opt/conda/bin/python -m ipykernel_launcher -f k.json", 1, 620),
        63: ("python", 1, 0, "python preprocess.py --shards 64", 1, 630),
    }
    proc = fake_proc(tmp_path, procs)
    monkeypatch.setattr(os, "getuid", lambda: 0)
    now = 1_700_000_000 + 100000
    watch = JobWatch(clock=lambda: now, proc_known=True)
    watch.scan({"sessions": []}, procfs.ProcScan(proc), now=now)
    names = sorted(r["name"] for r in watch.rows())
    assert names == ["/opt/conda/bin/python -m ipykernel_launcher -f k.json",
                     "python preprocess.py --shards 64"], names


def test_a_job_put_in_the_background_is_a_job_within_seconds(tmp_path):
    """`nohup python3 preprocess.py &` (or setsid, or `ssh box python3 x.py`: no terminal) is a job
    from its first seconds; a python in a login shell's terminal only after a minute, and one
    a second old (a prompt's helper, the probe's own start checks) never yet."""
    tck = procfs.CLK_TCK
    procs = {
        10: ("sshd", 1, 0, "sshd: root@pts/0", 0, 1 * tck),
        20: ("bash", 10, 34816, "-bash", 0, 2 * tck),
        30: ("python", 20, 34816, "python shell_job.py", 0, 90 * tck),      # a terminal: 10 s old
        50: ("python", 20, 34816, "python nohup_job.py", 1, 90 * tck),      # SIGHUP ignored
        60: ("python", 1, 0, "python setsid_job.py", 0, 94 * tck),          # no terminal, 6 s old
        70: ("python", 1, 0, "python -c import sys", 0, 99 * tck),          # 1 s old
        80: ("python", 20, 34816, "python old_shell_job.py", 0, 20 * tck),  # a terminal: 80 s old
        85: ("screen", 20, 34816, "screen -S prep", 0, 80 * tck),
        90: ("python", 85, 34818, "python in_screen.py", 0, 95 * tck),      # in screen, 5 s old
    }
    btime = 1_700_000_000
    scan = procfs.ProcScan(fake_proc(tmp_path, procs, btime=btime))
    assert protection.python_jobs(now=btime + 100, scan=scan) == [50, 60, 80, 90]
    # the old rule still holds where asked for (a minute for everything)
    assert protection.python_jobs(now=btime + 100, scan=scan, detached_age=60) == [80]


def test_a_young_background_job_is_listed_but_does_not_restart_autostops_window(tmp_path, monkeypatch):
    """Listed within seconds (the checklist, the Jobs panel), but autostop's "a job just appeared"
    counts a python job outside tmux only once it has run a minute, as before."""
    from remote_probe.watch.loop import JobWatch
    tck = procfs.CLK_TCK
    btime = 1_700_000_000
    procs = {1: ("systemd", 0, 0, "/sbin/init", 0, 1),
             60: ("python", 1, 0, "python prep.py", 1, 90 * tck)}  # nohup'd, 10 s old
    scan = procfs.ProcScan(fake_proc(tmp_path, procs, btime=btime))
    monkeypatch.setattr(os, "getuid", lambda: 0)
    now = [btime + 100.0]
    watch = JobWatch(clock=lambda: now[0], proc_known=True)
    watch.scan({"sessions": []}, scan, now=now[0])
    assert [r["name"] for r in watch.rows()] == ["python prep.py"]
    assert watch.newest_start() is None
    now[0] += 60
    assert watch.newest_start() == pytest.approx(btime + 90, abs=1)
