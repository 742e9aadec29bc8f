"""The benchmarks still run against the code they measure: three of them imported modules
that the move into tui/core|remote|ui (issue 15) had renamed, and nobody noticed until a
figure was wanted. Each bench also runs for a few seconds in a short mode (issue 26), so a
broken import, a crash on the way or a server left running fails the suite."""

import ast
import glob
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest
from tests.support import REPO

ROOT = REPO
BENCHES = sorted(glob.glob(os.path.join(ROOT, "bench", "*.py")))

# How each bench runs for a few seconds: its own options, made small. None: it cannot run here
# (the reason is the value's second part).
SHORT = {
    "app_cost.py": ["--seconds", "2", "--cases", "a100x2@80x24"],  # peers (htop, bpytop) where installed
    "frame_work.py": ["--samples", "3", "--gpus", "2", "--sizes", "80x24"],
    "app_profile.py": ["--seconds", "2", "--warm", "1", "--top", "3", "--case", "a100x2@80x24"],
    "app_flood.py": ["--samples", "12"],  # its memory figure starts at the 10th
    "checklist_bench.py": ["--files", "50", "--mb", "4", "--runs", "1", "--rtt-ms", "50"],
    "connect_resolve.py": ["--runs", "1"],
    "daemon_cpu.py": ["--seconds", "2"],
    "daemon_whole.py": ["--seconds", "2", "--settle", "1", "--rounds", "1", "--extra", "300"],
    "doctor_time.py": ["--runs", "1"],
    "fleet.py": ["--boxes", "2", "--idle", "2"],
    "hook_overhead.py": ["--batches", "200", "--rounds", "1"],
    "latency.py": ["--seconds", "2", "--cases", "2", "--no-hog"],  # the interrupt run below has the hog
    "probe_overhead.py": ["--ticks", "5"],
    "ring_memory.py": [],
    "status_time.py": ["--runs", "1", "--rtt-ms", "50"],
    "transport.py": ["--short"],
    "transfer.py": ["--mb", "4", "--runs", "1", "--rtt-ms", "50"],
    "wire_load.py": ["--ticks", "12", "--sizes", "2,5000"],  # memory from the 10th tick
}
# Modules the benches share (not benches themselves): what they start is cleaned up by the
# bench that uses them, so they are checked through those.
LIBS = {"bench_box.py", "bench_scope.py", "frame_log.py", "readme_table.py", "relay.py"}
NEEDS = {}  # bench -> a program it cannot run without (skipped where it is not installed)
CANNOT = {
    "dl_gpu.py": "needs a CUDA GPU",
    "nvml_record.py": "needs a real GPU (NVML)",
    # `pkill -9 -f "sshd: .*@notty"` would cut every ssh session on the machine, the parallel
    # workers' included
    "reconnect.py": "kills every notty sshd session on the machine",
}


def own_imports(path):
    """(module, name or None) for every import of gputui's own packages in the file."""
    for node in ast.walk(ast.parse(open(path).read(), path)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and \
                node.module.split(".")[0] in ("tui", "remote_probe", "tests"):
            for alias in node.names:
                yield node.module, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in ("tui", "remote_probe"):
                    yield alias.name, None


@pytest.mark.parametrize("path", BENCHES, ids=os.path.basename)
def test_every_import_of_our_code_resolves(path):
    for module, name in own_imports(path):
        mod = importlib.import_module(module)
        if name is not None and not hasattr(mod, name):
            importlib.import_module("%s.%s" % (module, name))  # a submodule, or ImportError


@pytest.mark.parametrize("path", [p for p in BENCHES if "argparse" in open(p).read()],
                         ids=os.path.basename)
def test_help_runs(path):
    r = subprocess.run([sys.executable, path, "--help"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60, cwd=ROOT)
    assert r.returncode == 0 and "usage" in r.stdout, r.stderr


def test_every_bench_has_a_short_run_or_a_reason():
    names = {os.path.basename(p) for p in BENCHES} - LIBS
    assert names == set(SHORT) | set(CANNOT), "add the new bench to SHORT (or CANNOT, with why)"


def _environ(p):
    import psutil
    try:
        return p.environ()
    except (OSError, psutil.Error):
        return {}


def processes_of(tmp, sid):
    """Processes started by the bench that are still there: in its session, naming its
    private temp dir (daemons leave the session, but their state dir is under it) or with it
    as their TMPDIR (servers the bench started in a session of their own)."""
    import psutil
    left = []
    for p in psutil.process_iter(["pid", "cmdline", "status"]):
        try:
            if p.info["status"] == psutil.STATUS_ZOMBIE:
                continue  # exited, its parent not yet woken to reap it: a live parent is listed itself
            if os.getsid(p.info["pid"]) == sid or tmp in " ".join(p.info["cmdline"] or ()) or \
                    _environ(p).get("TMPDIR") == tmp:  # children in a session of their own
                left.append("%d [%s] %s" % (p.info["pid"], p.info["status"],
                                            " ".join(p.info["cmdline"] or ())))
        except (OSError, psutil.Error):
            pass
    return left


def assert_no_box_user(pid):
    """bench/bench_box.py's throwaway user (named after the bench's pid), its home and its
    processes are gone."""
    import pwd
    import psutil
    name = "gt_bench%d" % pid
    with pytest.raises(KeyError):
        pwd.getpwnam(name)
    homes = glob.glob("/tmp/gputui-bench-box-*")
    left = []
    for p in psutil.process_iter(["username", "cmdline"]):
        if p.info["username"] in (name, None) and any(h in " ".join(p.info["cmdline"] or ())
                                                       for h in homes):
            left.append(p.pid)
    assert not left, "box user processes left: %s" % left


@pytest.mark.sshd  # most of them start an sshd; all of them take seconds, not milliseconds
@pytest.mark.timeout(240)
@pytest.mark.parametrize("name", sorted(SHORT))
def test_short_run_works_and_leaves_nothing_behind(name):
    if name in NEEDS and shutil.which(NEEDS[name]) is None:
        pytest.skip("%s needs %s" % (name, NEEDS[name]))
    tmp = tempfile.mkdtemp(prefix="gputui-bench-test-")
    try:
        env = dict(os.environ, TMPDIR=tmp)
        proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "bench", name)] + SHORT[name],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                cwd=ROOT, env=env, start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=200)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, 9)
        assert proc.returncode == 0, out[-3000:]
        assert out.strip(), "printed no figures"
        deadline = time.time() + 3  # a server told to stop may take a moment
        while processes_of(tmp, proc.pid) and time.time() < deadline:
            time.sleep(0.1)
        left = processes_of(tmp, proc.pid)
        assert not left, "left running after the bench ended:\n" + "\n".join(left)
        files = sorted(os.listdir(tmp))  # the bench's TMPDIR
        assert_no_box_user(proc.pid)
        assert not files, "left in its TMPDIR: %s" % files
    finally:
        import psutil
        for line in processes_of(tmp, proc.pid):
            try:
                psutil.Process(int(line.split()[0])).kill()
            except psutil.Error:
                pass
        shutil.rmtree(tmp, ignore_errors=True)


# Benches interrupted half way (Ctrl-C on the terminal reaches the bench's whole process group,
# SIGTERM/SIGHUP the bench alone): everything they started goes, and quickly (issue 26: the
# demo server outlived latency.py's SIGINT, which then lost the run's result).
INTERRUPT = [("latency.py", ["--seconds", "30"], "group", 8),
             ("status_time.py", ["--runs", "5", "--rtt-ms", "50"], "TERM", 6),
             ("checklist_bench.py", ["--files", "50", "--mb", "64", "--rtt-ms", "50"], "HUP", 8)]


@pytest.mark.sshd
@pytest.mark.timeout(120)
@pytest.mark.parametrize("name,args,how,after", INTERRUPT, ids=[i[0] for i in INTERRUPT])
def test_interrupted_bench_leaves_nothing_behind(name, args, how, after):
    import signal
    tmp = tempfile.mkdtemp(prefix="gputui-bench-test-")
    try:
        proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "bench", name)] + args,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                cwd=ROOT, env=dict(os.environ, TMPDIR=tmp), start_new_session=True)
        time.sleep(after)  # in the middle of it: servers up, a run going
        assert proc.poll() is None, proc.communicate()[0][-3000:]
        if how == "group":
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(getattr(signal, "SIG" + how))
        try:
            out, _ = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, 9)
        assert proc.returncode == 130, out[-3000:]
        assert "interrupted" in out
        deadline = time.time() + 3  # a child told to stop may take a moment
        while processes_of(tmp, proc.pid) and time.time() < deadline:
            time.sleep(0.1)
        left = processes_of(tmp, proc.pid)
        assert not left, "left running after the bench was interrupted:\n" + "\n".join(left)
        assert_no_box_user(proc.pid)
        assert not os.listdir(tmp), "left in its TMPDIR: %s" % os.listdir(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
