"""A probe daemon on the test box that has been watching it for a while: its history already
holds `samples` samples (at 1 Hz: an hour is 3600), so a laptop that connects for the first time
gets a full backlog, as on a box rented this morning. Started the way `probe attach` starts one
(its own session, the lock, the socket in the state dir), with the same config key, so attach and
the direct path use it instead of starting another."""

import os
import subprocess
import sys
import time

from remote_probe import paths

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Every sample of the past is the daemon's own first sample, stamped one second apart.
LAUNCH = r"""
import sys, time
from remote_probe import daemon, wire
state, scenario, samples = sys.argv[1], sys.argv[2], int(sys.argv[3])
make = daemon.Daemon.__init__
def aged(self, *args, **kwargs):
    make(self, *args, **kwargs)
    sample, now = self.sampler.tick(), time.time()
    for seq in range(1, samples + 1):
        self.history.append(seq, wire.encode(dict(sample, seq=seq, t=now - samples + seq)))
    self.seq = samples
daemon.Daemon.__init__ = aged
sys.exit(daemon.run_daemon(state, scenario))
"""


def start_aged_daemon(state_dir, scenario, samples, timeout=30.0):
    """The daemon's Popen once its socket is there (stop it with remote_probe.daemon.terminate,
    as the sshbox fixture does)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))
    os.makedirs(state_dir, mode=0o700, exist_ok=True)
    log = open(os.path.join(state_dir, "aged-daemon.log"), "ab")
    with log:
        proc = subprocess.Popen([sys.executable, "-c", LAUNCH, state_dir, scenario, str(samples)],
                                env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                cwd="/", start_new_session=True)
    sock = paths.socket_path(state_dir)
    deadline = time.monotonic() + timeout
    while not os.path.exists(sock):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("the aged daemon did not start (exit %s)" % proc.poll())
        time.sleep(0.05)
    return proc
