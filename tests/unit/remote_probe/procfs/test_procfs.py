"""/proc parsers against recorded text, and the meters against the real /proc."""

import os
import subprocess
import sys
import time

from remote_probe import procfs

STAT = """cpu  100 0 50 800 50 0 0 0 0 0
cpu0 50 0 25 400 25 0 0 0 0 0
cpu1 50 0 25 400 25 0 0 0 0 0
intr 1 2 3
btime 1700000000
"""
STAT2 = """cpu  200 0 100 850 150 0 0 0 0 0
cpu0 150 0 75 400 25 0 0 0 0 0
cpu1 50 0 25 450 125 0 0 0 0 0
btime 1700000000
"""


def test_cpu_meter_splits_busy_idle_and_iowait(tmp_path):
    f = tmp_path / "stat"
    f.write_text(STAT)
    meter = procfs.CpuMeter(str(f))
    first = meter.read()
    assert first["cpu"] is None and first["ncpu"] == 2  # no delta yet: unknown, not 0
    f.write_text(STAT2)
    r = meter.read()
    # total: busy +150, idle +50, iowait +100 -> 50% busy, 33% iowait
    assert r["cpu"] == 50.0 and r["iowait"] == 33.3
    assert r["cores"] == [100, 0]


def test_meminfo_uses_memavailable():
    text = "MemTotal: 2048000 kB\nMemFree: 100000 kB\nMemAvailable: 1024000 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n"
    m = procfs.parse_meminfo(text)
    assert m["mem_total"] == 2000 and m["mem_used"] == 1000 and m["mem_avail"] == 1000


def test_mounts_skip_pseudo_filesystems_and_unescape_spaces():
    text = """overlay / overlay rw 0 0
proc /proc proc rw 0 0
tmpfs /dev/shm tmpfs rw 0 0
/dev/vdb /root/autodl-tmp ext4 rw 0 0
/dev/vdc /data\\040disk xfs rw 0 0
/dev/vda1 /etc/hosts ext4 rw 0 0
"""
    assert procfs.parse_mounts(text) == [
        ("/", "overlay", "overlay"), ("/root/autodl-tmp", "ext4", "/dev/vdb"),
        ("/data disk", "xfs", "/dev/vdc")]


def test_net_dev_ignores_loopback():
    text = """Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 999999 1 0 0 0 0 0 0 999999 1 0 0 0 0 0 0
  eth0: 1000 1 0 0 0 0 0 0 2000 1 0 0 0 0 0 0
  eth1: 500 1 0 0 0 0 0 0 0 1 0 0 0 0 0 0
"""
    assert procfs.parse_net_dev(text) == (1500, 2000)


def test_pid_stat_with_parentheses_and_spaces_in_the_name():
    text = "1234 (my (weird) proc) S 1 1234 1234 0 -1 4194304 100 0 0 0 70 30 0 0 20 0 1 0 5000 1000000 2560 18446744073709551615"
    state, ppid, cpu, start, rss = procfs.parse_pid_stat(text)
    assert (state, ppid, cpu, start, rss) == ("S", 1, 100, 5000, 2560)


def test_proc_table_measures_a_real_busy_process():
    child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        table = procfs.ProcTable()
        table.sample([child.pid])
        time.sleep(0.5)
        stats = table.sample([child.pid])
        assert stats[child.pid]["cpu"] > 0  # how much is the scheduler's business on a busy box
        assert stats[child.pid]["rss"] >= 1
        meta = table.meta[child.pid]
        assert "while True" in meta["cmd"]
        assert abs(meta["start"] - time.time()) < 30
    finally:
        child.kill()
        child.wait()
    assert procfs.ProcTable().sample([child.pid]) == {}  # gone: no row, no error


def test_nvidia_fd_holders_reads_fd_links(tmp_path):
    proc = tmp_path / "proc"
    for pid, targets in {"10": ["/dev/nvidia3", "/dev/nvidiactl"], "11": ["/dev/null"],
                         "12": ["/dev/nvidia0", "/dev/nvidia1"]}.items():
        fd = proc / pid / "fd"
        fd.mkdir(parents=True)
        for i, t in enumerate(targets):
            os.symlink(t, fd / str(i))
    (proc / "self").mkdir()
    assert procfs.nvidia_fd_holders(str(proc)) == {10: {3}, 12: {0, 1}}


def test_real_host_metrics_are_sane():
    disks = procfs.DiskMeter().read()
    assert any(d["mount"] == "/" for d in disks)
    for d in disks:
        assert 0 <= d["used"] <= d["total"]
    assert procfs.boot_time() < time.time()


def test_read_text_reads_whole_files_and_says_default_when_it_cannot(tmp_path):
    big = tmp_path / "big"
    text = "".join("line %d ☃\n" % i for i in range(20000))  # several os.read chunks
    big.write_text(text, encoding="utf-8")
    assert procfs.read_text(str(big)) == text
    (tmp_path / "bad").write_bytes(b"ok \xff\n")
    assert procfs.read_text(str(tmp_path / "bad")) == "ok \ufffd\n"
    assert procfs.read_text(str(tmp_path / "missing"), "gone") == "gone"
    assert procfs.read_text(str(tmp_path), "a directory") == "a directory"
    assert procfs.read_text("/proc/self/stat").startswith("%d (" % os.getpid())
