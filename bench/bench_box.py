"""The box the connect and transfer benches log in to, the way a user's box is (issue 26).

A real sshd on 127.0.0.1 (the tests' fixture) that lets in one throwaway user, `gt_bench<pid>`,
whose login shell is /bin/bash and whose home is empty: no ~/.bashrc, no pyenv/conda hooks. The
peers (`ssh box true`, scp) and gputui both log in as that user, so both pay the same login.
(The developer's own account is no good as a peer: its ~/.bashrc runs `pyenv init`, which
doubles `ssh box true` while gputui's warm path opens no shell.)

The home lives under /tmp (the box user must reach it; the bench's TMPDIR is root-only), and
everything is removed on the way out, with the user and its processes.

With `rtt_ms`, an alias `relaybox` reaches the same sshd through bench/relay.py, which adds
that round-trip delay (half each way)."""

import os
import pathlib
import pwd
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)

from bench_scope import on_exit, popen_group  # noqa: E402
from tests.support.sshd import start_sshd, stop_daemon, stop_sshd  # noqa: E402

SHELL = "/bin/bash"


def _kill_user(uid):
    import psutil
    procs = []
    for p in psutil.process_iter(["uids"]):
        try:
            if p.info["uids"] and p.info["uids"].real == uid:
                p.kill()
                procs.append(p)
        except psutil.Error:
            pass
    psutil.wait_procs(procs, timeout=5)


def _remove_user(name, home):
    """The box user, its home, and the probe's fallback folder /tmp/gputui-<uid> (the probe's
    home here is not writable, so a command without --remote-dir puts the probe there; it
    outlived the user, owned by a uid no one has)."""
    try:
        uid = pwd.getpwnam(name).pw_uid
    except KeyError:
        uid = None
    subprocess.run(["userdel", name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shutil.rmtree(home, ignore_errors=True)
    if uid is not None:
        fallback = os.path.join("/tmp", "gputui-%d" % uid)
        if os.path.isdir(fallback) and not os.path.islink(fallback) and os.lstat(fallback).st_uid == uid:
            shutil.rmtree(fallback, ignore_errors=True)


def stop_with_sessions(box, stop=stop_sshd):
    """The sshd listener (stopped with `stop`) and the sessions under it (an interrupted
    connect leaves a session's sshd and its probe `attach` waiting for an EOF that comes
    seconds later)."""
    import psutil
    try:
        kids = psutil.Process(box.proc.pid).children(recursive=True)
    except psutil.Error:
        kids = []
    stop(box)
    for kid in kids:
        try:
            kid.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(kids, timeout=5)


class BenchBox:
    def __init__(self, sshd, user, home):
        self.sshd, self.user, self.home = sshd, user, home
        self.ssh_config = sshd.ssh_config
        self.remote_dir = str(home / "remote")
        self.relay_port = None

    def ssh(self, alias="testbox"):
        return ["ssh", "-F", self.ssh_config, alias]

    def alias(self, relayed):
        return "relaybox" if relayed else "testbox"

    def add_relay(self, rtt_ms):
        """`relaybox`: the same sshd through a loopback relay adding rtt_ms per round trip."""
        relay = popen_group([sys.executable, os.path.join(HERE, "relay.py"), "--to",
                             "127.0.0.1:%d" % self.sshd.port, "--rtt-ms", str(rtt_ms)],
                            stdout=subprocess.PIPE, text=True)
        self.relay_port = int(relay.stdout.readline().split()[-1])
        with open(self.ssh_config, "a") as f:
            f.write(open(self.ssh_config).read().replace("Host testbox", "Host relaybox")
                    .replace("Port %d" % self.sshd.port, "Port %d" % self.relay_port))
        with open(self.sshd.known_hosts, "a") as f:
            line = self.sshd.known_hosts.read_text().splitlines()[0]
            f.write(line.replace("]:%d " % self.sshd.port, "]:%d " % self.relay_port) + "\n")

    def give(self, path):
        """Make `path` (a file for the user to read) the box user's."""
        ent = pwd.getpwnam(self.user)
        os.chown(path, ent.pw_uid, ent.pw_gid)


def start_bench_box(prefix="gputui-bench-box-", rtt_ms=0):
    if os.geteuid() != 0:
        raise SystemExit("this bench creates a box user (useradd): run it as root")
    import tempfile
    user = "gt_bench%d" % os.getpid()
    home = pathlib.Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    on_exit(_remove_user, user, str(home))
    os.chmod(home, 0o755)
    subprocess.run(["userdel", user], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # -p "*": no password, but not locked (sshd without PAM refuses a locked account)
    subprocess.run(["useradd", "-M", "-d", str(home), "-s", SHELL, "-p", "*", user], check=True)
    ent = pwd.getpwnam(user)
    os.chown(home, ent.pw_uid, ent.pw_gid)
    on_exit(_kill_user, ent.pw_uid)
    # start_sshd lets in (and its ssh_config logs in as) $USER
    old = os.environ.get("USER")
    os.environ["USER"] = user
    try:
        sshd = start_sshd(home / "sshd")
    finally:
        if old is None:
            os.environ.pop("USER", None)
        else:
            os.environ["USER"] = old
    on_exit(stop_with_sessions, sshd)
    sshd.trust()
    os.chmod(sshd.root / "authorized_keys", 0o644)  # sshd reads it as the user
    box = BenchBox(sshd, user, home)
    on_exit(stop_daemon, box.remote_dir)
    if rtt_ms:
        box.add_relay(rtt_ms)
    return box


def timed(argv):
    """Seconds the command takes, start to exit (it must succeed)."""
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def rate_spread(seconds, mb, width=5):
    """"median MB/s (min-max)" over runs that each moved `mb` megabytes."""
    rates = [mb / x for x in seconds]
    return "%*.1f MB/s (%.1f-%.1f)" % (width, statistics.median(rates), min(rates), max(rates))
