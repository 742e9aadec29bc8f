"""The probe daemon: one per user per box, detached from any SSH session.

It samples at 1 Hz into a bounded ring buffer and serves clients on a unix socket in a
0700 runtime directory. ``attach`` (see attach.py) bridges an SSH exec channel's stdio
to that socket, so the history survives dropped connections and app restarts.
"""

import asyncio
import collections
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
import zlib

from . import __version__, dataloader, filexfer, procfs, protection, protocol, tmux
from .autostop import Autostop
from .backends import BackendError, select_backend
from .sampler import Sampler

log = logging.getLogger("gputui.probe")

RING_SAMPLES = 3600  # one hour at 1 Hz, full resolution
DOWNSAMPLE_EVERY = 30  # beyond the hour: one sample in 30, zlib-compressed...
HISTORY_SAMPLES = 24 * 3600 // DOWNSAMPLE_EVERY  # ...for 24 h
JOBS_EVERY = 5  # ticks between tmux / unprotected-job scans
HUNG_CALL_TIMEOUT = 5.0  # a GPU driver call longer than this is reported as hung
CLIENT_BUFFER_LIMIT = 4 << 20  # a client this far behind is dropped, not buffered forever
CAPABILITIES = ("samples", "backfill", "snapshot", "proc_meta", "autostop", "tmux", "jobs")


from .paths import (config_key, default_state_dir, ensure_private_dir, runtime_dir,  # noqa: E402,F401
                    self_command, socket_path, lock_path, refuse_stranger)


MAX_IN_FLIGHT = 32  # requests of one client running at once; more get an error reply
NO_REPLY = object()  # a handler that answered itself (or a hello, which needs no answer)


class RequestError(Exception):
    """A request that cannot be done: its error reply says why (str) plus `extra` fields."""

    def __init__(self, message, **extra):
        super().__init__(message)
        self.extra = extra


def request_id(msg):
    """The id a reply echoes: only a scalar, so a hostile id cannot make the reply fail."""
    rid = msg.get("id")
    return rid if isinstance(rid, (int, float, str)) or rid is None else None


def strings(msg, key):
    value = msg.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RequestError("%s: expected a list of strings" % key)
    return value


def in_use_message(config, sessions):
    return ("the probe daemon on this box runs %s (gputui %s) for %d other live session%s; "
            "it was left running. Close the other session, or use another --remote-dir."
            % (config.get("backend"), config.get("version"), sessions, "" if sessions == 1 else "s"))


class Client:
    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer
        self.subscribed = False
        self.known_pids = set()
        self.tasks = set()  # this client's requests in progress; cancelled when it leaves


class Daemon:
    def __init__(self, state_dir, simulate=None, interval=1.0, ring_size=RING_SAMPLES):
        self.state_dir = state_dir
        self.simulate = simulate
        self.interval = interval
        self.ring = collections.deque(maxlen=ring_size)  # (seq, encoded line)
        # (seq, zlib(line)) every DOWNSAMPLE_EVERY samples, for the 24 h beyond the ring
        self.history = collections.deque(maxlen=HISTORY_SAMPLES)
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
        self.handlers = self.request_handlers()
        self.seq = 0
        self.clients = set()
        self.started = time.time()
        self.sock_path = None  # set by serve()
        self.binds = 0  # times the socket was bound (again after someone deleted it)
        self.backend, self.notes = select_backend(simulate, state_dir=state_dir)
        self.sampler = Sampler(self.backend)
        self.inventory = self.sampler.inventory()
        self.inventory["notes"] = self.notes
        self.latest = None
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        self._pending = None  # a backend call still running from an earlier tick
        self.stop_event = None
        argv, env = self_command()
        if env is not None:  # from source (tests): the cancel script needs the path too
            argv = ["env", "PYTHONPATH=" + env["PYTHONPATH"]] + argv
        self.autostop = Autostop(state_dir, probe_command=argv)
        self.autostop.listeners.append(self._push_autostop)

    def _push_autostop(self, event):
        msg = {"type": protocol.AUTOSTOP, "event": event, "status": self.autostop.status()}
        for client in list(self.clients):
            if client.subscribed:
                self.send(client, msg)

    # -- messages ---------------------------------------------------------------
    def hello(self):
        return protocol.hello("probe", __version__, CAPABILITIES, pid=os.getpid(),
                              config=config_key(self.simulate), started=self.started,
                              last_seq=self.seq, socket=self.sock_path, binds=self.binds,
                              sessions=sum(1 for c in self.clients if c.subscribed))

    def send(self, client, msg=None, line=None):
        if client.writer.is_closing():
            return
        transport = client.writer.transport
        if transport.get_write_buffer_size() > CLIENT_BUFFER_LIMIT:
            log.warning("dropping a client that stopped reading")
            client.writer.close()
            return
        client.writer.write(line if line is not None else protocol.encode(msg))

    def send_meta(self, client, pids):
        new = [p for p in pids if p not in client.known_pids]
        if new:
            meta = self.sampler.proc_meta(new)
            if meta:
                self.send(client, {"type": protocol.PROC_META, "procs": meta})
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
        hooked = dataloader.read_hook_stats(dataloader.dl_dir(self.state_dir))
        if hooked:
            sample["dl"] = hooked[:protocol.MAX_DL_ROWS]
        protocol.cap_procs(sample)
        line = protocol.encode(sample)
        self.ring.append((self.seq, line))
        if self.seq % DOWNSAMPLE_EVERY == 0:
            self.history.append((self.seq, zlib.compress(line, 6)))
        self.latest = sample
        if "disks" in sample.get("host", {}):
            # Samples carry disks every few ticks; a newcomer gets the last report here.
            self.inventory["disks"] = sample["host"]["disks"]
        if not sample.get("gpu_error"):
            utils, compute = protocol.idle_inputs(sample)
            self.autostop.observe(utils, compute, t=sample["t"])
        pids = [row[0] for row in sample.get("procs", ())]
        for client in list(self.clients):
            if client.subscribed:
                self.send_meta(client, pids)
                self.send(client, line=line)

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
            gpu_pids = [row[0] for row in sample.get("procs", ())
                        if not row[5] & protocol.PROC_HOST_PID]
            self._jobs_pending = loop.run_in_executor(self.tmux_pool, self.scan_jobs, gpu_pids)

    def scan_jobs(self, gpu_pids):
        """tmux, dataloaders and unprotected jobs from one /proc pass over the kept index
        (one scan at a time: the index and its command-line cache are not shared)."""
        with self._scan_lock:
            scan = procfs.ProcScan(index=self.proc_index)
            return {"tmux": tmux.status(scan), "loaders": self.loaders.scan(scan),
                    "unprotected": protection.unprotected_jobs(gpu_pids, self.sampler.own_pids,
                                                               scan),
                    "reptyr": shutil.which("reptyr") is not None}

    def backlog(self, since):
        """Encoded samples after `since`: downsampled history, then the full-res ring."""
        ring_first = self.ring[0][0] if self.ring else self.seq + 1
        old = [zlib.decompress(z) for seq, z in self.history if since < seq < ring_first]
        return old + [line for seq, line in self.ring if seq > since]

    def _error_sample(self, reason):
        return {"type": protocol.SAMPLE, "t": round(time.time(), 2), "gpus": [], "procs": [],
                "host": {}, "gpu_error": reason}

    def owner_gone(self):
        """The demo sets GPUTUI_OWNER_PID so its daemon dies with it, even if the demo
        is killed before it can say goodbye. Real boxes never set it."""
        owner = os.environ.get("GPUTUI_OWNER_PID")
        if not owner or not owner.isdigit():
            return False
        try:
            os.kill(int(owner), 0)
        except ProcessLookupError:
            return True
        except OSError:
            return False
        return False

    async def sample_loop(self):
        next_at = time.monotonic()
        while True:
            if self.owner_gone():
                log.info("owner process is gone; stopping")
                self.stop_event.set()
                return
            try:
                await self.tick()
                await self._keep_socket()
            except Exception:  # a bug in one tick must not kill the daemon
                log.exception("sampling tick failed")
            next_at += self.interval
            delay = next_at - time.monotonic()
            if delay < 0:  # fell behind (suspended VM): skip, don't burst
                next_at = time.monotonic()
                delay = 0
            await asyncio.sleep(delay)

    # -- clients ----------------------------------------------------------------
    async def handle_client(self, reader, writer):
        """Read requests; each runs as its own task, so a slow one (a tmux install via
        apt, up to 600 s) never holds up pings, samples or the next request."""
        if refuse_stranger(writer, log):  # another user on the box: SO_PEERCRED, issue 20
            return
        client = Client(reader, writer)
        self.clients.add(client)
        self.send(client, self.hello())
        try:
            while True:
                try:
                    line = await reader.readline()
                except (ValueError, asyncio.LimitOverrunError):
                    self.send(client, {"type": protocol.ERROR, "id": None, "error": "line too long"})
                    continue
                if not line:
                    break
                try:
                    msg = protocol.decode(line)
                except protocol.ProtocolError as exc:
                    log.warning("skipped a malformed line: %s", exc)
                    self.send(client, {"type": protocol.ERROR, "id": None,
                                       "error": "malformed message: %s" % exc})
                    continue
                if len(client.tasks) >= MAX_IN_FLIGHT:
                    self.send(client, {"type": protocol.ERROR, "id": request_id(msg),
                                       "error": "too many requests in flight (%d)" % MAX_IN_FLIGHT})
                    continue
                task = asyncio.ensure_future(self.dispatch(client, msg))
                client.tasks.add(task)
                task.add_done_callback(client.tasks.discard)
        except (ConnectionError, OSError):
            pass
        finally:
            self.clients.discard(client)
            for task in list(client.tasks):  # nobody is left to read their replies
                task.cancel()
            writer.close()

    async def dispatch(self, client, msg):
        """Run the request's handler and always answer: a reply, or an error reply that
        says why (a bad argument, a failed command, a bug). Never silence: a client
        waiting for an id that never comes waits for its full timeout."""
        kind, rid = msg["type"], request_id(msg)
        handler = self.handlers.get(kind)
        try:
            if handler is None:
                raise RequestError("unknown request %r" % kind)
            problem = protocol.check_request(msg)
            if problem:
                raise RequestError(problem)
            result = await handler(client, msg)
        except asyncio.CancelledError:
            raise
        except RequestError as exc:
            reply = dict(exc.extra, type=protocol.ERROR, id=rid, error=str(exc))
        except Exception as exc:  # a bug in one handler: say so, keep the daemon
            log.exception("request %s failed", kind)
            reply = {"type": protocol.ERROR, "id": rid,
                     "error": "%s failed on the box: %s: %s" % (kind, type(exc).__name__, exc)}
        else:
            if result is NO_REPLY:
                return
            reply = {"type": protocol.REPLY, "id": rid}
            reply.update(result or {})
        self.send_reply(client, reply)

    def send_reply(self, client, reply):
        """Encode a reply; one that cannot go on the wire becomes an error that can."""
        try:
            line = protocol.encode(reply)
            if len(line) > protocol.MAX_LINE:
                raise RequestError("the reply is too large to send (%d bytes)" % len(line))
        except Exception as exc:  # noqa: BLE001 - e.g. a value JSON cannot hold
            log.warning("reply to %r not sendable: %s", reply.get("id"), exc)
            line = protocol.encode({"type": protocol.ERROR, "id": reply.get("id"),
                                    "error": "could not send the answer: %s" % exc})
        self.send(client, line=line)

    async def on_hello(self, client, msg):
        problem = protocol.check_compatible(msg)
        if problem:
            raise RequestError(problem)
        return NO_REPLY  # a compatible client's hello needs no answer

    async def on_ping(self, client, msg):
        return {"t": time.time()}

    async def on_snapshot(self, client, msg):
        pids = [row[0] for row in (self.latest or {}).get("procs", ())]
        sample = self.latest
        if sample is not None and "disks" not in sample.get("host", {}):
            sample = dict(sample, host=dict(sample.get("host", {}),
                                            disks=self.inventory.get("disks", [])))
        # a one-shot answer deserves a fresh scan, not one up to JOBS_EVERY ticks old
        jobs = await asyncio.get_running_loop().run_in_executor(
            self.tmux_pool, self.scan_jobs, list(pids))
        self.jobs = jobs
        return {"inventory": self.inventory, "sample": sample,
                "proc_meta": self.sampler.proc_meta(pids), "jobs": jobs,
                "autostop": self.autostop.status()}

    async def on_subscribe(self, client, msg):
        # No await before the backlog is queued and the flag set: no tick can slip between.
        since = msg.get("since_seq") or 0
        if not protocol._is_int(since):
            since = 0
        backlog = self.backlog(since)
        self.send_reply(client, {"type": protocol.REPLY, "id": request_id(msg),
                                 "inventory": self.inventory, "backlog": len(backlog),
                                 "last_seq": self.seq,
                                 "first_seq": self.ring[0][0] if self.ring else None,
                                 "autostop": self.autostop.status(),
                                 "autostop_events": self.autostop.events(), "jobs": self.jobs})
        pids = [row[0] for row in (self.latest or {}).get("procs", ())]
        self.send_meta(client, pids)
        for line in backlog:
            self.send(client, line=line)
        client.subscribed = True
        return NO_REPLY

    async def on_unsubscribe(self, client, msg):
        client.subscribed = False
        return {}

    async def on_autostop_arm(self, client, msg):
        try:
            status = self.autostop.arm(
                msg.get("command"), idle_seconds=msg.get("idle_seconds"),
                deadline=msg.get("deadline"), grace=msg.get("grace", 120.0),
                threshold=msg.get("threshold", 5.0))
        except (ValueError, TypeError, OSError) as exc:
            raise RequestError(str(exc))
        return {"autostop": status}

    async def on_autostop_disarm(self, client, msg):
        reason = msg.get("reason") if isinstance(msg.get("reason"), str) else None
        return {"autostop": self.autostop.disarm(reason or "cancelled from gputui")}

    async def on_autostop_status(self, client, msg):
        return {"autostop": self.autostop.status(), "events": self.autostop.events()}

    async def on_shutdown(self, client, msg):
        others = [c for c in self.clients if c is not client and c.subscribed]
        if others and msg.get("only_if_unused"):
            # A client with other settings wants its own daemon: not while sessions use
            # this one (two laptops would replace each other's daemon in a loop).
            raise RequestError(in_use_message(config_key(self.simulate), len(others)),
                               in_use=len(others), config=config_key(self.simulate))
        self.stop_event.set()  # first: a client that hangs up at once still stops us
        self.send_reply(client, {"type": protocol.REPLY, "id": request_id(msg), "stopping": True})
        try:
            await client.writer.drain()
        except (ConnectionError, OSError):
            pass
        return NO_REPLY

    async def on_preflight(self, client, msg):
        """Slow (a matmul per GPU): runs in its own thread, the connection stays live."""
        from . import preflight
        urls = msg.get("urls")
        if not (isinstance(urls, list) and all(isinstance(u, str) for u in urls)):
            urls = list(preflight.DEFAULT_URLS)
        python = msg.get("python") if isinstance(msg.get("python"), str) else None
        loop = asyncio.get_running_loop()
        facts = await loop.run_in_executor(
            None, lambda: preflight.collect(python, bool(msg.get("smoke", True)), urls))
        facts["inventory"] = self.inventory
        return {"facts": facts}

    # Slow or destructive work for the shutdown checklist, off the event loop.
    # Destructive requests only arrive after the user confirmed them in the app and
    # enabled them for the host in the config; the probe still checks the arguments.
    async def _off_loop(self, work, pool=None):
        try:
            return await asyncio.get_running_loop().run_in_executor(pool, work)
        except (ValueError, TypeError, OSError) as exc:
            raise RequestError(str(exc))

    async def on_checklist(self, client, msg):
        from . import checklist
        temp = strings(msg, "temp_dirs") if "temp_dirs" in msg else None
        caches = strings(msg, "cache_dirs") if "cache_dirs" in msg else None
        roots, paths = strings(msg, "roots") or None, strings(msg, "artifact_paths")
        return {"facts": await self._off_loop(lambda: checklist.collect(roots, paths, temp, caches))}

    async def on_sha256(self, client, msg):
        from . import checklist
        paths = strings(msg, "paths")
        return {"sha256": await self._off_loop(lambda: {p: checklist.sha256_of(p) for p in paths})}

    async def on_kill(self, client, msg):
        from . import checklist
        pid = msg.get("pid")
        if not protocol._is_int(pid) or pid <= 1 or pid in self.sampler.own_pids:
            raise RequestError("refusing to kill pid %r" % (pid,))
        return {"result": await self._off_loop(lambda: checklist.kill(pid))}

    async def on_delete(self, client, msg):
        from . import checklist
        paths, allowed = strings(msg, "paths"), strings(msg, "allowed")
        return {"deleted": await self._off_loop(lambda: checklist.delete(paths, allowed))}

    async def on_env_capture(self, client, msg):
        from . import checklist
        python = msg.get("python") if isinstance(msg.get("python"), str) else None
        return await self._off_loop(lambda: checklist.env_capture(python))

    async def on_file_read(self, client, msg):
        # Over a direct-streamlocal channel there is no attach bridge to answer file reads
        # (see filexfer), so the daemon answers them the same way.
        reply = await self._off_loop(lambda: filexfer.handle(msg))
        if reply["type"] == protocol.ERROR:
            raise RequestError(reply["error"])
        return {k: v for k, v in reply.items() if k not in ("type", "id")}

    async def on_release(self, client, msg):
        from . import autostop
        command = msg.get("command")
        if not isinstance(command, str) or not command.strip():
            raise RequestError("no release command")

        def work():
            self.autostop.log("release", command=command)
            code, output = autostop.run_release(command)
            self.autostop.log("released", command=command, exit=code, output=output[-2000:])
            return {"exit": code, "output": output[-4000:]}
        return await self._off_loop(work)

    async def on_tmux(self, client, msg):
        """tmux requests run off the event loop: a slow tmux must not stall sampling.
        Installing tmux (apt, up to 600 s) has its own thread, so scans go on meanwhile."""
        kind = msg["type"]

        def text(key):
            value = msg.get(key)
            if not isinstance(value, str) or not value:
                raise ValueError("%s: expected a non-empty string" % key)
            return value

        def work():
            if kind == protocol.TMUX_LIST:
                return {"tmux": tmux.status()}
            if kind == protocol.TMUX_CAPTURE:
                lines = msg.get("lines")
                lines = lines if protocol._is_int(lines) and 0 < lines <= 100000 else 300
                return {"text": tmux.capture(text("pane"), lines)}
            if kind == protocol.TMUX_NEW:
                env = msg.get("env") if isinstance(msg.get("env"), dict) else {}
                env = {k: v for k, v in env.items() if isinstance(v, str)}
                if msg.get("dlhook"):
                    env.update(dlhook_env(self.state_dir, os.environ.get("PYTHONPATH")))
                command = msg.get("command") if isinstance(msg.get("command"), str) else ""
                cwd = msg.get("cwd") if isinstance(msg.get("cwd"), str) else None
                return tmux.new_job(text("name"), command, cwd, env)
            if kind == protocol.TMUX_INTERRUPT:
                tmux.interrupt(text("pane"))
            elif kind == protocol.TMUX_KILL:
                tmux.kill_session(text("session"))
            elif kind == protocol.TMUX_RENAME:
                tmux.rename_session(text("session"), text("name"))
            elif kind == protocol.TMUX_INSTALL:
                return {"output": tmux.install()}
            return {}

        def work_then_rescan():
            result = work()
            if kind != protocol.TMUX_CAPTURE and kind != protocol.TMUX_LIST:
                # the change shows in the next sample, not up to JOBS_EVERY ticks later
                pids = [row[0] for row in (self.latest or {}).get("procs", ())]
                self.jobs = self.scan_jobs(pids)
                self._jobs_fresh = True
            return result

        pool = self.install_pool if kind == protocol.TMUX_INSTALL else self.tmux_pool
        try:
            result = await asyncio.get_running_loop().run_in_executor(pool, work_then_rescan)
        except tmux.TmuxMissing as exc:
            raise RequestError(str(exc), install=exc.install)
        except (tmux.TmuxError, ValueError, TypeError) as exc:
            raise RequestError(str(exc))
        return result or {}

    def request_handlers(self):
        """The dispatch table: request type -> handler(client, msg) -> reply fields."""
        table = {
            protocol.HELLO: self.on_hello,
            protocol.PING: self.on_ping,
            protocol.SNAPSHOT: self.on_snapshot,
            protocol.SUBSCRIBE: self.on_subscribe,
            protocol.UNSUBSCRIBE: self.on_unsubscribe,
            protocol.AUTOSTOP_ARM: self.on_autostop_arm,
            protocol.AUTOSTOP_DISARM: self.on_autostop_disarm,
            protocol.AUTOSTOP_STATUS: self.on_autostop_status,
            protocol.SHUTDOWN: self.on_shutdown,
            protocol.PREFLIGHT: self.on_preflight,
            protocol.CHECKLIST: self.on_checklist,
            protocol.SHA256: self.on_sha256,
            protocol.KILL: self.on_kill,
            protocol.DELETE: self.on_delete,
            protocol.ENV_CAPTURE: self.on_env_capture,
            protocol.RELEASE: self.on_release,
            filexfer.FILE_READ: self.on_file_read,
        }
        table.update((kind, self.on_tmux) for kind in protocol.TMUX_REQUESTS)
        return table

    # -- lifetime ---------------------------------------------------------------
    async def _bind(self):
        ensure_private_dir(os.path.dirname(self.sock_path))
        server = await asyncio.start_unix_server(self.handle_client, path=self.sock_path,
                                                 limit=protocol.MAX_LINE)
        os.chmod(self.sock_path, 0o600)
        self.binds += 1
        return server

    async def _keep_socket(self):
        """A /tmp cleaner (systemd-tmpfiles) or a hasty `rm -rf ~/.cache` can delete the
        socket under a daemon that still holds the lock: no client could reach it and no new
        daemon could start. Bind the path again (clients already connected are unaffected)."""
        if self.sock_path and not os.path.exists(self.sock_path):
            log.warning("the socket %s was deleted; listening there again", self.sock_path)
            self.server.close()
            self.server = await self._bind()

    async def serve(self, sock_path):
        self.sock_path = os.path.abspath(sock_path)  # in the hello: clients may connect to it directly
        self.stop_event = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, self.stop_event.set)
        if os.path.exists(sock_path):
            os.unlink(sock_path)  # stale: we hold the lock, so nobody else serves it
        self.server = await self._bind()
        sampling = asyncio.ensure_future(self.sample_loop())
        try:
            await self.stop_event.wait()
        finally:
            sampling.cancel()
            self.server.close()
            for client in list(self.clients):
                client.writer.close()
            try:
                os.unlink(sock_path)
            except OSError:
                pass
            self.backend.close()
            self.pool.shutdown(wait=False)
            self.tmux_pool.shutdown(wait=False)
            self.install_pool.shutdown(wait=False)


def terminate(state_dir, timeout=5.0):
    """SIGTERM the daemon named in the lock file and wait until it is gone.

    For the demo's exit and for tests; real boxes keep their daemon. A daemon reparented
    to an init that does not reap lingers as a zombie: that counts as gone.
    """
    try:
        with open(lock_path(state_dir)) as f:
            pid = json.loads(f.read() or "{}").get("pid")
        if not pid:
            return
        os.kill(pid, signal.SIGTERM)
        for _ in range(int(timeout / 0.05)):
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return
            time.sleep(0.05)
    except (OSError, ValueError, AttributeError):
        return  # no lock, no daemon, or it is gone


def install_dlhook(state_dir):
    """Copy the dataloader hook out of the zipapp to a stable path, so jobs started by
    hand need one line: export PYTHONPATH=$HOME/.cache/gputui/dlhook${PYTHONPATH:+:$PYTHONPATH}"""
    import pkgutil
    target = os.path.join(state_dir, "dlhook")
    os.makedirs(target, exist_ok=True)
    ensure_private_dir(dataloader.dl_dir(state_dir))
    for name in ("sitecustomize.py", "gputui_dlhook.py"):
        data = pkgutil.get_data("remote_probe", "dlhook_site/" + name)
        path = os.path.join(target, name)
        try:
            with open(path, "rb") as f:
                if f.read() == data:
                    continue
        except OSError:
            pass
        with open(path + ".tmp", "wb") as f:
            f.write(data)
        os.replace(path + ".tmp", path)
    return target


def dlhook_env(state_dir, base_pythonpath=None):
    """Environment that turns the hook on for a job gputui starts."""
    hook = os.path.join(state_dir, "dlhook")
    path = hook + (os.pathsep + base_pythonpath if base_pythonpath else "")
    return {"PYTHONPATH": path, "GPUTUI_DLHOOK_DIR": dataloader.dl_dir(state_dir)}


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
        return 0
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
        return 2
    log.info("probe daemon %s started (pid %d, backend %s)", __version__, os.getpid(),
             daemon.backend.name)
    asyncio.run(daemon.serve(socket_path(state_dir)))
    log.info("probe daemon stopped")
    return 0
