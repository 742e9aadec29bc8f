"""The probe daemon: one per user per box, detached from any SSH session.

It samples at 1 Hz into a bounded history and serves clients on a unix socket in a
0700 runtime directory. ``attach`` (see attach.py) bridges an SSH exec channel's stdio
to that socket, so the history survives dropped connections and app restarts.

This module is the daemon's lifetime (lock, start, stop) and its sampling loop; the
socket is server.py, the requests handlers.py, the backlog history.py
(docs/architecture.md, "The probe").
"""

import asyncio
import concurrent.futures
import fcntl
import json
import logging
import os
import shutil
import signal
import sys
import threading
import time

from remote_probe import __version__, daemon_secret, dataloader, handlers, procfs, tmux_control as tmux, wire
from remote_probe.autostop import release_verify, supervise
from remote_probe.watch import protection
from remote_probe.autostop.policy import Autostop
from remote_probe.watch.box_watch import BoxWatch
from remote_probe.backends import BackendError, select_backend
from remote_probe.dlhook import install_dlhook
from remote_probe.history import RING_SAMPLES, SampleHistory
from remote_probe.autostop.idle_count import IdleCount
from remote_probe.paths import ensure_private_dir, lock_path, runtime_dir, self_command, socket_path
from remote_probe.sampler import Sampler
from remote_probe.server import SocketServer

log = logging.getLogger("gputui.probe")

JOBS_EVERY = 5  # ticks between tmux / unprotected-job scans
HUNG_CALL_TIMEOUT = 5.0  # a GPU driver call longer than this is reported as hung
CAPABILITIES = ("samples", "backfill", "snapshot", "proc_meta", "autostop", "tmux", "jobs",
                "watch", "notify")


def lower_thread_priority():
    """Nice 19 for the calling thread alone (Linux sets priority per thread id); elsewhere, or
    where it is refused, the thread keeps its priority."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    except (AttributeError, OSError):
        pass


def gpu_job_pids(sample):
    """The pids of a sample's GPU processes that can be jobs here: this /proc's only. In a
    container the driver also reports host pids, and one that happens to equal a local pid is
    not that local process (the jobs scans used to pick their pids each its own way, and two
    of them counted host pids as local processes)."""
    return wire.proc_pids(sample, local_only=True)


class Daemon:
    def __init__(self, state_dir, simulate=None, interval=1.0, ring_size=RING_SAMPLES):
        self.state_dir = state_dir
        self.simulate = simulate
        self.interval = interval
        self.history = SampleHistory(ring_size)
        self.jobs = None  # the last tmux + unprotected-jobs scan
        self._jobs_pending = None
        self._jobs_fresh = False
        self.loaders = dataloader.LoaderWatch()
        # /proc as of the last jobs scan: a scan reads what changed, not every process, and
        # lists /proc only as often as LIST_BUDGET allows (every 10 s with 2,000 processes)
        self.proc_index = procfs.ProcIndex(budget=procfs.LIST_BUDGET)
        self._scan_lock = threading.Lock()  # scans come from tmux_pool and install_pool
        self.tmux_pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        # installing tmux takes minutes: its own thread, so jobs scans and snapshots go on
        self.install_pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        # hashing checkpoints for a download: at the lowest priority, so the box's own work
        # (the user's training, its dataloader workers) and the transfer itself go first
        self.bulk_pool = concurrent.futures.ThreadPoolExecutor(max_workers=2,
                                                               initializer=lower_thread_priority)
        # proves this daemon on the direct path (wire/challenge.py)
        self.secret = daemon_secret.load_secret(state_dir)
        self.server = SocketServer(handlers.bound(self), self.hello)
        self.seq = 0
        self.started = time.time()
        self.backend, self.notes = select_backend(simulate, state_dir=state_dir)
        self.sampler = Sampler(self.backend)
        self.inventory = self.sampler.inventory()
        self.inventory["notes"] = self.notes
        # idle seconds of this boot, kept here (the daemon sees every sample) and sent in
        # each sample as idle_s; the laptop takes them when it judges idle the same way
        self.idle_count = IdleCount(state_dir, self.inventory["host"].get("boot_id"))
        self.inventory["idle_threshold"] = wire.DEFAULT_THRESHOLD
        self.latest = None
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        self._pending = None  # a backend call still running from an earlier tick
        self.stop_event = None
        argv, env = self_command()
        if env is not None:  # from source (tests): the cancel script needs the path too
            argv = ["env", "PYTHONPATH=" + env["PYTHONPATH"]] + argv
        host = self.inventory["host"]  # a release still up on this boot: release_verify.py
        self.autostop = Autostop(state_dir, probe_command=argv, boot_id=release_verify.boot_key(
            host.get("boot_id"), host.get("instance_start")))
        self.autostop.listeners.append(self._push_autostop)
        # jobs judged, notifications sent, autostop's idle inputs (box_watch.py)
        self.watch = BoxWatch(state_dir, self.autostop, interval, push=self._push_all)
        self.autostop.verify_setting = self._release_verify_setting

    def _release_verify_setting(self):
        """The laptop's [notify] watch setting release_verify_s (tests make it short)."""
        notifier = self.watch.notifier
        return notifier.watch_settings().get("release_verify_s") if notifier else None

    def _push_all(self, msg):
        for client in self.server.subscribers():
            self.server.send(client, msg)

    def _push_autostop(self, event):
        if event.get("event") == "armed":  # armed: a watcher restarts us if we die
            supervise.start_supervisor(self.state_dir, self.simulate)
        msg = {"type": wire.AUTOSTOP, "event": event, "status": self.autostop.status()}
        for client in self.server.subscribers():
            self.server.send(client, msg)

    # -- messages ---------------------------------------------------------------
    def hello(self):
        return wire.hello("probe", __version__, CAPABILITIES, pid=os.getpid(),
                          config=wire.config_key(self.simulate), started=self.started,
                          last_seq=self.seq, socket=self.server.path, binds=self.server.binds,
                          sessions=len(self.server.subscribers()), key=self.secret)

    def send_meta(self, client, pids):
        new = [p for p in pids if p not in client.known_pids]
        if new:
            meta = self.sampler.proc_meta(new)
            if meta:
                self.server.send(client, {"type": wire.PROC_META, "procs": meta})
        # Only the pids of this sample: with 15k new pids a second the set stays the
        # size of one sample (a pid that comes back gets its meta again, which is right:
        # it is another process).
        client.known_pids = set(pids)

    # -- sampling ---------------------------------------------------------------
    async def tick(self):
        loop = asyncio.get_running_loop()
        if self._pending is not None and not self._pending.done():
            sample = self._error_sample("GPU driver call hung for over %.0f s" % HUNG_CALL_TIMEOUT)
        else:
            self._pending = loop.run_in_executor(self.pool, self.sampler.tick)
            try:
                sample = await asyncio.wait_for(asyncio.shield(self._pending), HUNG_CALL_TIMEOUT)
            except asyncio.TimeoutError:
                sample = self._error_sample("GPU driver call hung for over %.0f s" % HUNG_CALL_TIMEOUT)
        self.seq += 1
        sample["seq"] = self.seq
        self._attach_jobs(sample, loop)
        sample["idle_s"] = round(self.idle_count.add(sample), 1)
        hooked = dataloader.read_hook_stats(dataloader.dl_dir(self.state_dir))
        if hooked:
            sample["dl"] = hooked[:wire.MAX_DL_ROWS]
        line = wire.encode(sample)
        self.history.append(self.seq, line)
        self.latest = sample
        if "disks" in sample.get("host", {}):
            # Samples carry disks every few ticks; a newcomer gets the last report here.
            self.inventory["disks"] = sample["host"]["disks"]
        self.watch.on_clock(sample["t"])  # the budget watch: the bill runs on a GPU error too
        self.autostop.check_release(sample["t"])  # released, and still up? (release_verify)
        if not sample.get("gpu_error"):
            self.watch.on_sample(sample, self.inventory)
        pids = wire.proc_pids(sample)
        for client in self.server.subscribers():
            self.send_meta(client, pids)
            self.server.send(client, line=line)

    def _attach_jobs(self, sample, loop):
        """Every few ticks: tmux sessions and unprotected jobs, scanned off the loop."""
        if self._jobs_fresh:
            self._jobs_fresh = False
            sample["jobs"] = self.jobs
        pending = self._jobs_pending
        if pending is not None and pending.done():
            self._jobs_pending = None
            try:
                self.jobs = pending.result()
                sample["jobs"] = self.jobs
            except Exception:  # a scan bug must not stop sampling
                log.exception("jobs scan failed")
        if self.seq % JOBS_EVERY == 1 and self._jobs_pending is None:
            self._jobs_pending = loop.run_in_executor(self.tmux_pool, self.scan_jobs, gpu_job_pids(sample))

    def scan_jobs(self, gpu_pids=None, recheck=()):
        """tmux, dataloaders and unprotected jobs from one /proc pass over the kept index
        (one scan at a time: the index and its command-line cache are not shared). `gpu_pids`:
        gpu_job_pids() of a sample, the latest by default. `recheck`: pids read again now (a
        pid just killed), not when /proc is next listed."""
        if gpu_pids is None:
            gpu_pids = gpu_job_pids(self.latest or {})
        with self._scan_lock:
            for pid in recheck:
                self.proc_index.read(pid)  # gone: dropped from the index
            scan = procfs.ProcScan(index=self.proc_index)
            panes = tmux.status(scan)
            jobs = {"tmux": panes, "loaders": self.loaders.scan(scan),
                    "unprotected": protection.unprotected_jobs(gpu_pids, self.sampler.own_pids,
                                                               scan),
                    "reptyr": shutil.which("reptyr") is not None,
                    "watch": self.watch.on_scan(panes, scan, self.sampler.own_pids),
                    "clocks": self.watch.clocks(time.time())}
            if not procfs.proc_available():
                jobs["no_proc"] = True  # the laptop says what cannot be seen (wire.JOBS_BLOCK)
            return jobs

    def rescan_jobs(self, recheck=()):
        """After a tmux change or a kill (off the loop): scan now, and put it in the next sample.
        The job watch judges now too, not when its own interval next comes round."""
        self.watch.jobs.last_scan = 0.0
        self.jobs = self.scan_jobs(recheck=recheck)
        self._jobs_fresh = True

    def _error_sample(self, reason):
        return {"type": wire.SAMPLE, "t": round(time.time(), 2), "gpus": [], "procs": [],
                "host": {}, "gpu_error": reason}

    def owner_gone(self):
        """The demo sets GPUTUI_OWNER_PID so its daemon dies with it, even if the demo
        is killed before it can say goodbye. Real boxes never set it."""
        return supervise.owner_gone()  # the same rule as the autostop watcher's

    async def sample_loop(self):
        next_at = time.monotonic()
        while True:
            if self.owner_gone():
                log.info("owner process is gone; stopping")
                self.stop_event.set()
                return
            try:
                await self.tick()
                await self.server.keep_bound()
            except Exception:  # a bug in one tick must not kill the daemon
                log.exception("sampling tick failed")
            next_at += self.interval
            delay = next_at - time.monotonic()
            if delay < 0:  # fell behind (suspended VM): skip, don't burst
                next_at = time.monotonic()
                delay = 0
            await asyncio.sleep(delay)

    # -- lifetime ---------------------------------------------------------------
    async def serve(self, sock_path):
        self.stop_event = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, self.stop_event.set)
        if os.path.exists(sock_path):
            os.unlink(sock_path)  # stale: we hold the lock, so nobody else serves it
        await self.server.bind(sock_path)
        self.watch.start(loop)
        if self.autostop.armed:  # armed before a restart: watch this daemon too
            supervise.start_supervisor(self.state_dir, self.simulate)
        sampling = asyncio.ensure_future(self.sample_loop())
        try:
            await self.stop_event.wait()
        finally:
            sampling.cancel()
            self.watch.stop()
            self.idle_count.save(force=True)
            self.server.close()
            self.backend.close()
            self.pool.shutdown(wait=False)
            self.tmux_pool.shutdown(wait=False)
            self.install_pool.shutdown(wait=False)
            self.bulk_pool.shutdown(wait=False)


def terminate(state_dir, timeout=5.0):
    """SIGTERM the daemon named in the lock file and wait until it is gone.

    For the demo's exit and for tests; real boxes keep their daemon. A daemon reparented
    to an init that does not reap lingers as a zombie: that counts as gone. The autostop
    watcher goes first, so it does not start the daemon again.
    """
    supervise.stop_supervisor(state_dir)
    try:
        with open(lock_path(state_dir)) as f:
            pid = json.loads(f.read() or "{}").get("pid")
        if not pid:
            return
        os.kill(pid, signal.SIGTERM)
        procfs.wait_gone(pid, timeout)  # signal 0 and /proc's zombie state: works without /proc
    except (OSError, ValueError, AttributeError):
        return  # no lock, no daemon, or it is gone


def run_daemon(state_dir, simulate=None, interval=1.0):
    """Entry point of ``probe daemon``. Returns an exit code."""
    rdir = runtime_dir(state_dir)
    ensure_private_dir(state_dir)
    ensure_private_dir(rdir)
    lock = open(lock_path(state_dir), "a+")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        log.info("another probe daemon holds the lock; exiting")
        return wire.EXIT_OK
    lock.seek(0)
    lock.truncate()
    lock.write(json.dumps({"pid": os.getpid(), "started": time.time()}))
    lock.flush()
    try:
        install_dlhook(state_dir)
    except OSError as exc:
        log.warning("dataloader hook not installed: %s", exc)
    try:
        daemon = Daemon(state_dir, simulate=simulate, interval=interval)
    except BackendError as exc:
        log.error("cannot start: %s", exc)
        print("gputui probe: %s" % exc, file=sys.stderr)
        return wire.EXIT_CANNOT_START
    log.info("probe daemon %s started (pid %d, backend %s)", __version__, os.getpid(),
             daemon.backend.name)
    asyncio.run(daemon.serve(socket_path(state_dir)))
    log.info("probe daemon stopped")
    return wire.EXIT_OK
