"""A live session with one box: SSH, probe deployment, subscription, reconnects.

The session owns the connection and pushes what arrives to a listener; it stores no
history itself (``tui.state`` does). It reconnects by itself after transient
failures with capped exponential backoff and jitter, resubscribing from the last
sequence number it saw so the daemon fills the gap.
"""

import asyncio
import logging
import random
import time
from typing import Awaitable, Callable, Optional

import asyncssh

from remote_probe import protocol
from tui.remote import bootstrap, ssh
from tui.remote.probe_bundle import build_probe, probe_filename
from tui.remote.probe_client import ProbeClient, ProbeError

log = logging.getLogger("gputui.session")

PING_EVERY = 5.0
PREFLIGHT_TIMEOUT = 240.0  # a matmul per GPU in the training env, each step with its own timeout
BACKOFF_FIRST = 1.0
BACKOFF_CAP = 30.0


# What a request to the probe raises when the box refuses, the link drops or time runs out.
REQUEST_ERRORS = (ProbeError, asyncio.TimeoutError, OSError)


READY_WAIT = 20.0  # seconds a request waits for a connecting session to become live


class FatalError(ssh.ConnectError):
    """Retrying will not help until the user changes something (auth, keys, python)."""


# States shown in the header.
CONNECTING, DEPLOYING, STARTING, LIVE, RECONNECTING, FAILED, CLOSED = (
    "connecting", "deploying probe", "starting probe", "live", "reconnecting", "failed", "closed")


class Listener:
    """What a session reports. Every method is optional."""

    def on_state(self, state, detail=""):
        pass

    def on_inventory(self, inventory):
        pass

    def on_sample(self, sample):
        pass

    def on_proc_meta(self, procs):
        pass

    def on_latency(self, ms):
        pass

    def on_autostop(self, status, event=None, events=None):
        pass

    def on_jobs(self, jobs):
        pass


def backoff_delay(attempt, rng=random.random):
    """Seconds before reconnect attempt N (1-based): 1, 2, 4, ... capped, with jitter."""
    base = min(BACKOFF_CAP, BACKOFF_FIRST * (2 ** max(0, attempt - 1)))
    return round(base * (0.5 + 0.5 * rng()), 2)


async def deploy_probe(conn, remote_dir=None):
    """Upload the probe zipapp if the box lacks this exact build. -> True if uploaded."""
    data, sha = build_probe()
    directory = remote_dir or bootstrap.DEFAULT_REMOTE_DIR
    final = "%s/%s" % (directory.rstrip("/"), probe_filename(sha))
    try:
        async with conn.start_sftp_client() as sftp:
            await sftp.makedirs(directory, exist_ok=True)
            if await sftp.exists(final):
                return False
            # temp name + rename: a dropped upload never leaves a truncated probe behind
            tmp = "%s.tmp-%06x" % (final, random.getrandbits(24))
            try:
                async with sftp.open(tmp, "wb") as f:
                    await f.write(data)
                try:
                    await sftp.posix_rename(tmp, final)
                except asyncssh.SFTPOpUnsupported:
                    await sftp.rename(tmp, final)
            except BaseException:
                try:
                    await sftp.remove(tmp)
                except (asyncssh.Error, OSError):
                    pass
                raise
    except asyncssh.SFTPError as exc:
        hint = " (is the box's disk full? check `df -h ~`)" if exc.code in (
            asyncssh.FX_FAILURE, getattr(asyncssh, "FX_NO_SPACE_ON_FILESYSTEM", -1)) else ""
        raise FatalError("Could not upload the probe to %s on the box: %s%s"
                         % (directory, exc.reason or exc, hint))
    except asyncssh.ChannelOpenError as exc:
        raise FatalError("The box refused an SFTP session (needed to deploy the probe): %s"
                         % exc.reason)
    return True


class RemoteSession:
    def __init__(self, target, simulate=None, remote_dir=None, listener=None,
                 ask_trust: Optional[Callable[[ssh.UnknownHostKey], Awaitable[bool]]] = None,
                 remote_python=None):
        self.target = target
        self.remote_python = remote_python
        self.simulate = simulate
        self.remote_dir = remote_dir
        self.listener = listener or Listener()
        self.ask_trust = ask_trust
        self.conn = None
        self.process = None
        self.client = None
        self.last_seq = 0
        self.daemon_id = None
        self.inventory = None
        self.uploaded = False
        self.state = CONNECTING
        self.attempt = 0
        self.connects = 0
        self.rtt_ms = None
        self.next_attempt_at = None  # monotonic time of the next reconnect attempt
        self._retry_now = asyncio.Event()
        self._closing = False
        self._state_changed = asyncio.Event()

    # -- events ----------------------------------------------------------------
    def _set_state(self, state, detail=""):
        self.state = state
        self.listener.on_state(state, detail)
        self._state_changed.set()  # wakes requests waiting for the session to be live
        self._state_changed = asyncio.Event()

    def _on_push(self, msg):
        kind = msg["type"]
        if kind == protocol.SAMPLE:
            if msg["seq"] <= self.last_seq:
                return  # already have it (backlog overlap after a reconnect)
            self.last_seq = msg["seq"]
            self.listener.on_sample(msg)
            if msg.get("jobs"):
                self.listener.on_jobs(msg["jobs"])
        elif kind == protocol.PROC_META:
            self.listener.on_proc_meta(msg["procs"])
        elif kind == protocol.AUTOSTOP:
            self.listener.on_autostop(msg["status"], event=msg.get("event"))
        elif kind == protocol.INVENTORY:
            self.inventory = msg
            self.listener.on_inventory(msg)

    # -- one attempt -------------------------------------------------------------
    async def _connect_ssh(self):
        while True:
            try:
                return await ssh.connect(self.target)
            except ssh.UnknownHostKey as exc:
                if self.ask_trust is None or not await self.ask_trust(exc):
                    raise FatalError(str(exc) + " - not trusted; nothing was sent to the box")
                ssh.trust_host_key(exc)
            except ssh.ChangedHostKey as exc:
                raise FatalError(str(exc))
            except ssh.ConnectError as exc:
                cause = exc.__cause__
                if isinstance(cause, (asyncssh.PermissionDenied, asyncssh.HostKeyNotVerifiable)):
                    raise FatalError(str(exc))
                raise

    async def _start_probe(self, mode="attach"):
        """Run the bootstrap; deploy on 'probe missing' and run it again."""
        _data, sha = build_probe()
        for _ in range(2):
            cmd = bootstrap.probe_command(
                sha, mode=mode, simulate=self.simulate, remote_dir=self.remote_dir,
                candidates=(self.remote_python,) if self.remote_python else bootstrap.PYTHON_CANDIDATES)
            process = await self.conn.create_process(cmd, encoding=None)
            client = ProbeClient(process.stdout, process.stdin, on_push=self._on_push)
            try:
                await client.start()
                return process, client
            except (ProbeError, asyncio.TimeoutError) as exc:
                stderr = b""
                try:
                    # wait() drains the streams and hands back what stderr said
                    done = await asyncio.wait_for(process.wait(), 5)
                    stderr = done.stderr or b""
                except asyncio.TimeoutError:
                    process.close()
                except (asyncssh.Error, OSError):
                    pass
                code = process.exit_status
                stderr = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else stderr
                if code == protocol.EXIT_PROBE_MISSING:
                    self._set_state(DEPLOYING)
                    self.uploaded = await deploy_probe(self.conn, self.remote_dir)
                    continue
                if code in (protocol.EXIT_NO_PYTHON, protocol.EXIT_PYTHON_TOO_OLD,
                            protocol.EXIT_PROBE_CRASHED, 127):
                    raise FatalError(bootstrap.explain_exit(code, stderr))
                if code is not None:
                    raise ssh.ConnectError(bootstrap.explain_exit(code, stderr))
                raise ssh.ConnectError("The probe did not answer: %s" % exc)
        raise FatalError("The probe could not be deployed (it is still missing after upload)")

    async def open(self):
        """Connect, start the probe and subscribe. Raises ConnectError/FatalError."""
        self._set_state(CONNECTING if self.connects == 0 else RECONNECTING,
                        "attempt %d" % self.attempt if self.attempt else "")
        self.conn = await self._connect_ssh()
        try:
            self._set_state(STARTING)
            self.process, self.client = await self._start_probe()
            daemon_id = (self.client.hello.get("pid"), self.client.hello.get("started"))
            if daemon_id != self.daemon_id:
                # A new daemon (box rebooted, probe upgraded): its seqs start over.
                self.last_seq = 0
                self.daemon_id = daemon_id
            t0 = time.monotonic()
            reply = await self.client.request(protocol.SUBSCRIBE, since_seq=self.last_seq)
            self._note_rtt(t0)
            self.inventory = reply.get("inventory")
            if self.inventory:
                self.listener.on_inventory(self.inventory)
            if reply.get("jobs"):
                self.listener.on_jobs(reply["jobs"])
            if "autostop" in reply:
                self.listener.on_autostop(reply["autostop"], events=reply.get("autostop_events"))
        except BaseException:
            self.conn.close()
            raise
        self.connects += 1
        self.attempt = 0
        self.next_attempt_at = None
        self._set_state(LIVE)

    def _note_rtt(self, t0):
        self.rtt_ms = round((time.monotonic() - t0) * 1000, 1)
        self.listener.on_latency(self.rtt_ms)

    async def _ping_loop(self):
        while True:
            await asyncio.sleep(PING_EVERY)
            t0 = time.monotonic()
            try:
                await self.client.request(protocol.PING, timeout=2 * ssh.KEEPALIVE_INTERVAL)
            except (ProbeError, asyncio.TimeoutError):
                log.info("ping failed; dropping the connection")
                self.conn.close()
                return
            self._note_rtt(t0)

    async def _wait_lost(self):
        pinger = asyncio.ensure_future(self._ping_loop())
        try:
            await self.client.closed.wait()
        finally:
            pinger.cancel()
            self.conn.close()

    # -- the loop ---------------------------------------------------------------
    async def fresh_snapshot(self):
        """A snapshot whose sample is complete: a daemon that just started has no CPU
        delta yet, so wait for its next tick (up to 3 s)."""
        reply = await self.client.request(protocol.SNAPSHOT)
        for _ in range(3):
            if (reply.get("sample") or {}).get("host", {}).get("cpu") is not None:
                break
            await asyncio.sleep(1.0)
            reply = await self.client.request(protocol.SNAPSHOT)
        return reply

    async def request(self, kind, wait_live=READY_WAIT, **params):
        """A request to the live probe. Made while the session is still connecting (a key
        pressed in the first second), it waits up to `wait_live` seconds for the session to
        be live, then is sent; ProbeError when there is no live connection by then."""
        deadline = time.monotonic() + wait_live
        while self.client is None or self.client.closed.is_set() or self.state != LIVE:
            left = deadline - time.monotonic()
            if self._closing or self.state not in (CONNECTING, DEPLOYING, STARTING) or left <= 0:
                raise ProbeError("not connected to the box (%s)" % self.state)
            try:
                await asyncio.wait_for(self._state_changed.wait(), left)
            except asyncio.TimeoutError:
                pass
        return await self.client.request(kind, **params)

    def retry_now(self):
        self._retry_now.set()

    async def _port_watch(self, was_down):
        """During a backoff wait: cut it short as soon as sshd accepts again.

        Probing the TCP port every 0.5 s is nearly free and gets live data back within a
        second of the link returning instead of at the next backoff step. Not used
        through a ProxyJump/ProxyCommand, where the port is not ours to probe.
        """
        try:
            options = self.target.options()
        except Exception:  # noqa: BLE001 - no watch, plain backoff
            return
        if options.tunnel or options.proxy_command:
            return
        while True:
            await asyncio.sleep(0.5)
            try:
                _, writer = await asyncio.wait_for(
                    asyncio.open_connection(options.host, options.port or 22), 1.0)
                writer.close()
                if was_down:
                    self._retry_now.set()
                    return
            except (OSError, asyncio.TimeoutError):
                was_down = True

    async def run(self):
        """Stay connected until close(); FatalError ends the loop in state FAILED."""
        lost_live = False
        while not self._closing:
            try:
                await self.open()
                await self._wait_lost()
                if self._closing:
                    break
                detail = "connection lost"
                lost_live = True
            except FatalError as exc:
                self._set_state(FAILED, str(exc))
                return
            except (ssh.ConnectError, ProbeError, asyncssh.Error, OSError,
                    asyncio.TimeoutError) as exc:
                detail = str(exc) or exc.__class__.__name__
            self.attempt += 1
            # A link that was live a moment ago gets one immediate retry (sshd restarted,
            # Wi-Fi changed); after that, capped exponential backoff with jitter.
            delay = 0.2 if lost_live else backoff_delay(self.attempt)
            lost_live = False
            self.next_attempt_at = time.monotonic() + delay
            self._set_state(RECONNECTING, "%s - attempt %d, next in %.0fs"
                            % (detail, self.attempt, delay))
            self._retry_now.clear()
            watcher = asyncio.ensure_future(self._port_watch(was_down=False))
            try:
                await asyncio.wait_for(self._retry_now.wait(), delay)
            except asyncio.TimeoutError:
                pass
            finally:
                watcher.cancel()
        self._set_state(CLOSED)

    async def close(self, stop_daemon=False):
        self._closing = True
        self._retry_now.set()
        if stop_daemon and self.client is not None and not self.client.closed.is_set():
            try:
                await self.client.request(protocol.SHUTDOWN, timeout=5)
            except (ProbeError, asyncio.TimeoutError):
                pass
        if self.client is not None:
            await self.client.close()
        if self.conn is not None:
            self.conn.close()
            try:
                await asyncio.wait_for(self.conn.wait_closed(), 3)
            except asyncio.TimeoutError:
                pass


async def snapshot(target, simulate=None, remote_dir=None, ask_trust=None, remote_python=None,
                   preflight=None):
    """One-shot: connect, start the probe, return the snapshot reply
    (inventory, sample, proc_meta, jobs); with `preflight` (request params) also the
    preflight facts under "preflight"."""
    session = RemoteSession(target, simulate=simulate, remote_dir=remote_dir, ask_trust=ask_trust,
                            remote_python=remote_python)
    session.conn = await session._connect_ssh()
    try:
        session.process, session.client = await session._start_probe()
        t0 = time.monotonic()
        reply = await session.fresh_snapshot()
        session._note_rtt(t0)
        if preflight is not None:
            facts = await session.client.request(protocol.PREFLIGHT, timeout=PREFLIGHT_TIMEOUT,
                                                 **preflight)
            reply["preflight"] = facts["facts"]
        return reply
    finally:
        await session.close()
