"""The daemon's /proc index: a jobs scan reads what changed (new, reused, reparented pids,
and a rotating share of the rest), not every process on the box (issue 12).

Decisions are table-tested on pids_to_read; the index itself against the real /proc with
real `sleep` processes."""

import collections
import os
import subprocess
import time

import pytest

from remote_probe import procfs
from remote_probe.watch import protection

from tests.unit.remote_probe.test_procscan import BOX, count_reads, fake_proc

NEVER = 10 ** 9  # a rotation period no test pass reaches


def test_an_unchanged_box_reads_nothing_but_its_rotation():
    known = {10: 1, 11: 2, 12: 3}
    stats = {10: ("sh", "S", 1), 11: ("a", "S", 10), 12: ("b", "S", 10)}
    assert procfs.pids_to_read(known, dict(known), stats, set(), 5, NEVER) == (set(), set(), set())
    # every pid is read once in `every` passes, one share each pass
    seen = collections.Counter()
    for pass_no in range(1, 5):
        read, _gone, _new = procfs.pids_to_read(known, dict(known), stats, set(), pass_no, 4)
        assert len(read) <= 1
        seen.update(read)
    assert seen == {10: 1, 11: 1, 12: 1}


@pytest.mark.parametrize("name, listed, recent, read, gone, new", [
    ("a new pid", {10: 1, 11: 2, 12: 3, 13: 9}, set(), {13}, set(), {13}),
    ("a reused pid has another inode", {10: 1, 11: 2, 12: 7}, set(), {12}, set(), {12}),
    ("its parent exited: reparented", {11: 2, 12: 3}, set(), {11, 12}, {10}, set()),
    ("new at the last pass: once more", {10: 1, 11: 2, 12: 3}, {11}, {11}, set(), set()),
    ("a recent pid that left is not read", {10: 1, 12: 3}, {11}, set(), {11}, set()),
])
def test_what_a_pass_reads(name, listed, recent, read, gone, new):
    known = {10: 1, 11: 2, 12: 3}
    stats = {10: ("sh", "S", 1), 11: ("a", "S", 10), 12: ("b", "S", 10)}
    assert procfs.pids_to_read(known, listed, stats, recent, 5, NEVER) == (read, gone, new)


def sleeper(seconds="600"):
    return subprocess.Popen(["sleep", seconds])


def stop(*procs):
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


def test_a_pass_reads_a_process_when_it_appears_not_while_it_runs():
    index = procfs.ProcIndex(every=NEVER)
    old = sleeper()
    try:
        index.refresh()
        assert old.pid in index.last_read and index.stats[old.pid][0] == "sleep"
        index.refresh()  # new at the last pass: read once more (it may have exec'd since)
        assert old.pid in index.last_read
        index.refresh()
        assert old.pid not in index.last_read and old.pid in index.stats
        new = sleeper()
        index.refresh()
        assert new.pid in index.last_read and old.pid not in index.last_read
        stop(new)
        index.refresh()
        assert new.pid in index.last_gone and new.pid not in index.stats
        assert old.pid not in index.last_read and old.pid in index.stats
    finally:
        stop(old)


def test_at_the_first_pass_only_young_processes_get_a_second_look():
    """A daemon starting on a box that has run for days finds every pid "new"; reading all
    of them again at the next pass was most of what 2,000 idle processes cost it."""
    index = procfs.ProcIndex(every=NEVER)
    young = sleeper()
    try:
        index.refresh()
        assert {1, young.pid} <= index.last_read  # the first pass reads everything
        index.refresh()
        assert young.pid in index.last_read  # started seconds ago: it may exec yet
        assert 1 not in index.last_read  # init has run since boot
    finally:
        stop(young)


def test_a_scan_over_the_index_reads_cpu_figures_in_every_pass():
    index = procfs.ProcIndex(every=NEVER)
    busy = subprocess.Popen(["sh", "-c", "while :; do :; done"])
    try:
        for _ in range(3):
            procfs.ProcScan(index=index)
        first = procfs.ProcScan(index=index)
        assert busy.pid not in index.last_read
        cpu0 = first.stat(busy.pid)[2]
        deadline = time.time() + 10
        while time.time() < deadline:
            time.sleep(0.2)
            later = procfs.ProcScan(index=index)
            if later.stat(busy.pid)[2] > cpu0:
                break
        assert later.stat(busy.pid)[2] > cpu0  # read in this pass, not the index's old line
    finally:
        stop(busy)


def test_children_of_a_process_that_exited_are_read_again():
    parent = subprocess.Popen(["sh", "-c", "sleep 600 & echo $!; read x"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    child = int(parent.stdout.readline())
    try:
        index = procfs.ProcIndex(every=NEVER)
        for _ in range(3):
            index.refresh()
        assert index.stats[child][2] == parent.pid and child not in index.last_read
        parent.stdin.close()  # sh reads EOF and exits; its sleep is reparented
        parent.wait()
        index.refresh()
        assert parent.pid in index.last_gone and child in index.last_read
        assert index.stats[child][2] != parent.pid
    finally:
        os.kill(child, 9)
        parent.wait()


def take_pid(pid, argv, tries=200):
    """Start argv as `pid` (root can set the next pid: /proc/sys/kernel/ns_last_pid)."""
    for _ in range(tries):
        try:
            with open("/proc/sys/kernel/ns_last_pid", "w") as f:
                f.write(str(pid - 1))
        except OSError as exc:
            pytest.skip("cannot choose the next pid here: %s" % exc)
        p = subprocess.Popen(argv)
        if p.pid == pid:
            return p
        stop(p)  # another process took it first: try again
    pytest.skip("pid %d was always taken first" % pid)


def test_a_reused_pid_is_read_again_and_its_cached_command_line_dropped():
    index = procfs.ProcIndex(every=NEVER)
    first = sleeper("601")
    pid = first.pid
    try:
        for _ in range(3):
            scan = procfs.ProcScan(index=index)
        assert scan.cmdline(pid) == "sleep 601"
        start = index.stats[pid][5]
    finally:
        stop(first)
    second = take_pid(pid, ["sleep", "602"])
    try:
        scan = procfs.ProcScan(index=index)
        assert pid in index.last_read and pid not in index.last_gone  # listed both times
        # the start time may well be the same clock tick: the inode tells them apart
        assert index.stats[pid][5] >= start
        # an empty command line is not cached (read again by the next scan): on a loaded
        # machine the kernel may not show the new one at the very first read
        deadline = time.time() + 5
        while scan.cmdline(pid) == "" and time.time() < deadline:
            time.sleep(0.05)
            scan = procfs.ProcScan(index=index)
        assert scan.cmdline(pid) == "sleep 602"
    finally:
        stop(second)


def test_sighup_is_read_only_for_jobs_that_would_otherwise_be_reported(tmp_path, monkeypatch):
    proc = fake_proc(tmp_path, BOX)
    reads = count_reads(monkeypatch)
    if os.getuid() != 0:
        pytest.skip("as another user, python jobs read owners from the same status files")
    jobs = protection.unprotected_jobs([30, 41], scan=procfs.ProcScan(proc, cache={}))
    assert [j["pid"] for j in jobs] == [30, 31]  # 41 runs in tmux, 50 was nohup'd
    status_reads = sorted(p for p in reads if p.endswith("/status"))
    # not the bash and sshd up each chain, not 41 (tmux protects it whatever it ignores)
    assert status_reads == [proc + "/30/status", proc + "/31/status", proc + "/50/status"]


@pytest.mark.parametrize("cost, since, budget, due", [
    (0.0003, 5.0, 0.0004, True),  # 150 processes: listed on every 5 s scan
    (0.004, 5.0, 0.0004, False),  # 2,000: not after 5 s...
    (0.004, 10.0, 0.0004, True),  # ...but after 10
    (0.004, 0.0, None, True),  # no budget: every pass
])
def test_listing_is_due_when_the_budget_allows(cost, since, budget, due):
    assert procfs.listing_due(cost, since, budget) is due


def test_between_listings_a_scan_reads_new_pids_it_is_asked_about_and_drops_gone_ones():
    now = [1000.0]
    index = procfs.ProcIndex(every=NEVER, budget=1e-9, clock=lambda: now[0])
    gone, new = sleeper(), None
    try:
        procfs.ProcScan(index=index)
        assert gone.pid in index.stats
        new = sleeper()
        stop(gone)
        now[0] += 1.0  # far less than the budget allows: no listing
        scan = procfs.ProcScan(index=index)
        assert not index.last_read and new.pid not in index.stats
        assert scan.start(new.pid) == pytest.approx(time.time(), abs=30)  # read when asked
        assert [c[0] for c in protection.ancestry(new.pid, scan=scan)][0] == new.pid
        assert scan.stat(gone.pid) is None and gone.pid not in index.stats
        now[0] += 10 ** 9  # the budget allows a listing again
        procfs.ProcScan(index=index)
        assert new.pid in index.last_read  # listed now: new to the listing
    finally:
        stop(gone, *([new] if new else []))
