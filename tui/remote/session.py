"""A live session with one box: SSH, probe deployment, subscription, reconnects.

The session owns the connection and pushes what arrives to a listener; it stores no
history itself (``tui.core.state`` does). It reconnects by itself after transient
failures with capped exponential backoff and jitter, resubscribing from the last
sequence number it saw so the daemon fills the gap. How the probe is started
(exec channel or a PTY-only proxy's terminal) is ``tui.remote.transports``; failures
that waiting cannot heal raise FatalError and end the loop with the reason.
"""

import asyncio
import contextlib
import logging
import random
import time
from typing import Awaitable, Callable, Optional

import asyncssh

from remote_probe import wire
from tui.core.session import probe_sockets
from tui.core.i18n import _
from tui.core.session.conn_state import ConnState
from tui.remote import notify_push, port_watch, ssh, tcp_ack, transports
from tui.remote.late_sync import LateEvent
from tui.remote.probe import files as probe_files
from tui.remote.probe.client import IncompatibleProbe, ProbeError

log = logging.getLogger("gputui.session")

PING_EVERY = 5.0
SFTP_START_TIMEOUT = 10.0  # noise from a chatty shell can leave the SFTP handshake hanging
PREFLIGHT_TIMEOUT = 240.0  # a matmul per GPU in the training env, each step with its own timeout
BACKOFF_FIRST = 1.0
BACKOFF_CAP = 30.0


# What a request to the probe raises when the box refuses, the link drops or time runs out.
REQUEST_ERRORS = (ProbeError, asyncio.TimeoutError, OSError)


READY_WAIT = 20.0  # seconds a request waits for a connecting session to become live


class FatalError(ssh.ConnectError):
    """Retrying will not help until the user changes something (auth, keys, python)."""


# States shown in the header (their labels and styles: tui.core.model.ConnState).
CONNECTING, DEPLOYING, STARTING, LIVE, RECONNECTING, FAILED, CLOSED = (
    ConnState.CONNECTING, ConnState.DEPLOYING, ConnState.STARTING, ConnState.LIVE,
    ConnState.RECONNECTING, ConnState.FAILED, ConnState.CLOSED)


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

    def on_notify_event(self, event):
        """A notification the daemon queued (toasted once: DashboardState.take_notify_event)."""

    def on_notice(self, text):
        """Something the user should know that is not a failure (a fallback taken)."""


def backoff_delay(attempt, rng=random.random):
    """Seconds before reconnect attempt N (1-based): 1, 2, 4, ... capped, with jitter."""
    base = min(BACKOFF_CAP, BACKOFF_FIRST * (2 ** max(0, attempt - 1)))
    return round(base * (0.5 + 0.5 * rng()), 2)


class RemoteSession:
    def __init__(self, target, simulate=None, remote_dir=None, listener=None,
                 ask_trust: Optional[Callable[[ssh.UnknownHostKey], Awaitable[bool]]] = None,
                 remote_python=None, asker=None, notify_config=None):
        self.target = target
        self.notify_config = notify_config  # tui.core.notify.wire params: secrets, never logged
        self.notify_reply = None  # the box's answer (tui.remote.notify_push): redacted
        # passwords/passphrases typed for this run live here (memory only) for reconnects
        self.credentials = ssh.Credentials(asker)
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
        self._retry_now = LateEvent()  # sessions are made before their loop runs: late_sync
        self._closing = False
        # "exec" until the box refuses an exec channel the way PTY-only proxies do;
        # then "pty" for the rest of this session (reconnects skip the refused try).
        self.transport_name = transports.EXEC
        self.pty_reason = ""
        self.notices = []
        self.deploy_seconds = None  # NEED -> GOT of the last probe upload
        self.remote_state_dir = None  # where the probe lives on the box, as the box said
        self.sftp_refused = None  # why SFTP failed on this connection (files go via the probe)
        # push/pull: SFTP is asked for while the probe starts (its 4 round trips overlap the
        # probe's instead of following them: 1.2 s at 300 ms); file_client takes it
        self.files_early = False
        self._sftp_early = None
        self.direct = False  # this connection reached the daemon's socket without a command
        self._direct_failed = None  # the cache entry whose socket would not open, this attempt
        self._state_changed = LateEvent()

    # -- events ----------------------------------------------------------------
    def _set_state(self, state, detail=""):
        self.state = state
        self.listener.on_state(state, detail)
        self._state_changed.set()  # wakes requests waiting for the session to be live
        self._state_changed = LateEvent()

    def _on_push(self, msg):
        kind = msg["type"]
        if kind == wire.SAMPLE:
            if msg["seq"] <= self.last_seq:
                return  # already have it (backlog overlap after a reconnect)
            self.last_seq = msg["seq"]
            self.listener.on_sample(msg)
            notice = self.client.take_notice() if self.client is not None else None
            if notice:  # what the wire boundary dropped or cleared: said once
                self._notice(notice)
            if msg.get("jobs"):
                self.listener.on_jobs(msg["jobs"])
        elif kind == wire.PROC_META:
            self.listener.on_proc_meta(msg["procs"])
        elif kind == wire.AUTOSTOP:
            self.listener.on_autostop(msg["status"], event=msg.get("event"))
        elif kind == wire.INVENTORY:
            self.inventory = msg
            self.listener.on_inventory(msg)
        elif kind == notify_push.NOTIFY_EVENT:
            self.listener.on_notify_event(msg)

    # -- one attempt -------------------------------------------------------------
    async def _connect_ssh(self):
        while True:
            try:
                return await ssh.connect(self.target, self.credentials)
            except ssh.UnknownHostKey as exc:
                if self.ask_trust is None or not await self.ask_trust(exc):
                    raise FatalError(str(exc) + _(" - not trusted; nothing was sent to the box"))
                ssh.trust_host_key(exc)
            except ssh.ChangedHostKey as exc:
                raise FatalError(str(exc))
            except ssh.ConnectError as exc:
                cause = exc.__cause__
                if isinstance(exc, ssh.NotRetryable) or isinstance(
                        cause, (asyncssh.PermissionDenied, asyncssh.HostKeyNotVerifiable)):
                    raise FatalError(str(exc))
                raise

    @property
    def transport_label(self):
        """Which transport carries the probe, for the header."""
        return transports.LABELS[self.transport_name]

    def _notice(self, text):
        if text not in self.notices:
            self.notices.append(text)
            log.info("notice: %s", text)
            self.listener.on_notice(text)

    def _socket_key(self):
        """This box + login + state dir, for tui.core.session.probe_sockets; None if unknown."""
        try:
            host_key = self.conn.get_server_host_key()
        except (AttributeError, asyncssh.Error):
            host_key = None
        if host_key is None:
            return None
        return probe_sockets.cache_key(host_key.get_fingerprint(),
                                       self.conn.get_extra_info("username"), self.remote_dir)

    async def _start_direct(self, key):
        """The running daemon through its socket (no command on the box), or None."""
        entry = probe_sockets.recall(key) if key else None
        if not entry or entry.get("refused"):
            return None
        try:
            started = await transports.start_direct(
                self.conn, entry["socket"], wire.config_key(self.simulate), on_push=self._on_push,
                remote_dir=entry["remote_dir"], notes=entry["notes"], secret=entry["secret"])
        except transports.DirectRefused as exc:
            log.info("the box does not open socket channels (%s); using a command", exc)
            probe_sockets.refused(key, str(exc))
            return None
        except transports.DirectUnavailable as exc:
            log.info("the daemon's socket is not usable (%s); starting the probe", exc)
            probe_sockets.forget(key)
            if exc.channel_refused:
                self._direct_failed = dict(entry, why=str(exc))
            return None
        log.info("reached the daemon through its socket %s", entry["socket"])
        return started

    def _remember_socket(self, key, started):
        hello = started.client.hello
        socket, failed = hello.get("socket"), self._direct_failed
        if not socket:
            return  # a probe from before direct attach
        daemon = [hello.get("pid"), hello.get("binds")]
        if failed and failed["socket"] == socket and failed.get("daemon") == daemon:
            # The same daemon was listening at that socket all along (same pid, not bound
            # again since): sshd refuses socket channels on this box
            # (AllowStreamLocalForwarding no / DisableForwarding).
            probe_sockets.refused(key, failed["why"])
        else:
            probe_sockets.remember(key, socket, started.remote_dir, started.notes, daemon=daemon,
                                   secret=hello.get("key"))

    async def _start_probe(self, mode="attach"):
        """Start the probe over this session's transport; switch to the terminal
        transport when the box refuses exec like a PTY-only proxy; redeploy once when
        the probe there speaks another protocol. A daemon already running is reached
        through its socket first (tui.core.session.probe_sockets). -> (process, client)."""
        process, client = await self._start_probe_once(mode)
        client.ack_now = tcp_ack.ack_now_for(self.conn)  # replies in a row: no 40 ms wait each
        return process, client

    async def _start_probe_once(self, mode):
        key = self._socket_key() if mode == "attach" and self.transport_name == transports.EXEC else None
        self._direct_failed = None
        started = await self._start_direct(key)
        self.direct = started is not None
        if started is not None:
            self.remote_state_dir = started.remote_dir
            for note in started.notes:
                self._notice(note)
            return started.process, started.client
        from tui.remote.probe.bundle import build_probe  # not needed where the socket answers
        data, sha = build_probe()
        plan = transports.Plan(data, sha, mode=mode, simulate=self.simulate,
                               remote_dir=self.remote_dir, remote_python=self.remote_python)
        for _attempt in range(3):
            try:
                started = await transports.start(
                    self.conn, self.transport_name, plan, on_push=self._on_push,
                    on_deploying=lambda: self._set_state(DEPLOYING), why=self.pty_reason)
            except transports.PtyOnly as exc:
                log.info("exec refused (%s): switching to the terminal transport", exc)
                self.transport_name, self.pty_reason = transports.PTY, str(exc)
                self._notice(_("This box allows only a terminal (PTY) session (%s); "
                               "gputui runs its probe through the terminal") % exc)
                continue
            except IncompatibleProbe as exc:
                if plan.replace:
                    raise FatalError(_("The probe on the box still speaks another protocol after "
                                       "a redeploy (%s). Remove %s on the box and connect again.")
                                     % (exc, self.remote_state_dir or "~/.cache/gputui"))
                log.info("%s", exc)
                plan.replace = True
                self._set_state(DEPLOYING, _("the probe there speaks another protocol; redeploying"))
                continue
            except transports.StartFailed as exc:
                if exc.fatal:
                    raise FatalError(str(exc)) from exc
                raise
            # the zipapp's 230 kB stay out of memory for the whole run: a reconnect that must
            # redeploy builds it again (20 ms; the same bytes, the same hash) (issue 25)
            build_probe.cache_clear()
            self.uploaded = self.uploaded or started.uploaded
            if started.uploaded:
                self.deploy_seconds = started.deploy_seconds
            self.remote_state_dir = started.remote_dir
            for note in started.notes:
                self._notice(note)
            if key and self.transport_name == transports.EXEC:
                self._remember_socket(key, started)
            return started.process, started.client
        raise FatalError(_("The probe could not be started on the box"))

    @contextlib.asynccontextmanager
    async def file_client(self):
        """Something to download with (``tui.core.transfer.download``): SFTP where the box
        offers it, else reads through the probe channel (PTY-only proxies, shells whose
        noise breaks SFTP)."""
        sftp = None
        early, self._sftp_early = self._sftp_early, None
        if self.transport_name == transports.EXEC and self.sftp_refused is None:
            try:
                sftp = await asyncio.wait_for(early if early is not None else self.conn.start_sftp_client(),
                                              SFTP_START_TIMEOUT)
            except (asyncssh.Error, OSError, asyncio.TimeoutError) as exc:
                self.sftp_refused = str(exc) or exc.__class__.__name__
                self._notice(_("SFTP does not work on this box (%s); files come through the "
                               "probe channel") % self.sftp_refused)
        elif early is not None:  # a terminal-only box: the early try went nowhere
            early.cancel()
            await asyncio.gather(early, return_exceptions=True)
        if sftp is None:
            yield probe_files.ProbeFiles(self.request)
            return
        try:
            yield sftp
        finally:
            sftp.exit()
            try:
                await asyncio.wait_for(sftp.wait_closed(), 3)
            except (asyncio.TimeoutError, asyncssh.Error, OSError):
                pass

    async def open(self):
        """Connect, start the probe and subscribe. Raises ConnectError/FatalError."""
        self._set_state(CONNECTING if self.connects == 0 else RECONNECTING,
                        _("attempt %d") % self.attempt if self.attempt else "")
        self.conn = await self._connect_ssh()
        self.sftp_refused = None
        self._sftp_early = None
        if self.files_early and self.transport_name == transports.EXEC:
            self._sftp_early = asyncio.ensure_future(self.conn.start_sftp_client())
            self._sftp_early.add_done_callback(_retrieved)
        try:
            self._set_state(STARTING)
            self.process, self.client = await self._start_probe()
            daemon_id = (self.client.hello.get("pid"), self.client.hello.get("started"))
            if daemon_id != self.daemon_id:
                # A new daemon (box rebooted, probe upgraded): its seqs start over.
                self.last_seq = 0
                self.daemon_id = daemon_id
            t0 = time.monotonic()
            if self.files_early:  # push/pull: the box's kept samples are not replayed (issue 38)
                self.last_seq = max(self.last_seq, self.client.hello_seq())
            reply = await self.client.request(wire.SUBSCRIBE, since_seq=self.last_seq)
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
        if self.notify_config is not None:
            asyncio.ensure_future(notify_push.send_notify_config(self))

    def _note_rtt(self, t0):
        self.rtt_ms = round((time.monotonic() - t0) * 1000, 1)
        self.listener.on_latency(self.rtt_ms)

    async def _ping_loop(self):
        while True:
            await asyncio.sleep(PING_EVERY)
            t0 = time.monotonic()
            try:
                await self.client.request(wire.PING, timeout=2 * ssh.KEEPALIVE_INTERVAL)
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
    async def fresh_snapshot(self, sent=None):
        """A snapshot whose sample is complete. The daemon's first tick already carries a CPU
        figure; an older daemon's may not, so look again briefly (up to 3 s). `sent`: a
        snapshot request already on its way (ProbeClient.send)."""
        reply = await (self.client.reply(sent) if sent else self.client.request(wire.SNAPSHOT))
        for _attempt in range(12):
            if (reply.get("sample") or {}).get("host", {}).get("cpu") is not None:
                break
            await asyncio.sleep(0.25)
            reply = await self.client.request(wire.SNAPSHOT)
        return reply

    async def request(self, kind, wait_live=READY_WAIT, retry_lost=False, **params):
        """A request to the live probe. Made while the session is still connecting (a key
        pressed in the first second), it waits up to `wait_live` seconds for the session to
        be live, then is sent; ProbeError when there is no live connection by then.
        `retry_lost`, for requests that only read: a reply lost with its channel (the session
        reconnects by itself at once) is asked for once more, on the next channel."""
        for again in (False, True):
            deadline = time.monotonic() + wait_live
            waits = (CONNECTING, DEPLOYING, STARTING) + ((LIVE, RECONNECTING) if again else ())
            while self.client is None or self.client.closed.is_set() or self.state != LIVE:
                left = deadline - time.monotonic()
                if self._closing or self.state not in waits or left <= 0:
                    raise ProbeError("not connected to the box (%s)" % self.state)
                try:
                    await asyncio.wait_for(self._state_changed.wait(), left)
                except asyncio.TimeoutError:
                    pass
            client = self.client
            try:
                return await client.request(kind, **params)
            except ProbeError:
                if again or not retry_lost or self._closing or not client.closed.is_set():
                    raise  # refused by the box, lost twice, or not to be repeated
            log.info("a %s request lost its channel before the reply; asking again", kind)

    def retry_now(self):
        self._retry_now.set()

    async def _port_watch(self, was_down):
        """During a backoff wait: cut it short as soon as sshd accepts again (port_watch)."""
        if await port_watch.sshd_back(self.target, was_down):
            self._retry_now.set()

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
            self._set_state(RECONNECTING, _("%s - attempt %d, next in %.0fs")
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
                await self.client.request(wire.SHUTDOWN, timeout=5)
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


def _retrieved(fut):
    """An early SFTP start nobody took (the probe failed to start): its error is no warning."""
    if not fut.cancelled():
        fut.exception()


async def snapshot(target, simulate=None, remote_dir=None, ask_trust=None, remote_python=None,
                   preflight=None, asker=None, notify_config=None, price=False):
    """One-shot: connect, start the probe, return the snapshot reply
    (inventory, sample, proc_meta, jobs); with `preflight` (request params) also the
    preflight facts under "preflight"; with `notify_config`, that is sent first; with `price`
    the provider's price and balance as the box read them, under "price"."""
    session = RemoteSession(target, simulate=simulate, remote_dir=remote_dir, ask_trust=ask_trust,
                            remote_python=remote_python, asker=asker, notify_config=notify_config)
    session.conn = await session._connect_ssh()
    price_sent = None
    try:
        session.process, session.client = await session._start_probe()
        # Every request goes out before any reply is awaited: one round trip for all of
        # them, not one each (issue 26). The daemon runs each as its own task.
        t0 = time.monotonic()
        notify = (asyncio.ensure_future(notify_push.send_notify_config(session))
                  if notify_config is not None else None)
        snap_sent = session.client.send(wire.SNAPSHOT)
        price_sent = session.client.send(wire.PROVIDER_PRICE) if price else None
        reply = await session.fresh_snapshot(snap_sent)
        session._note_rtt(t0)
        if notify is not None:
            await notify  # its problems are notices of this reply
        reply["transport"] = session.transport_name
        reply["notices"] = list(session.notices)
        if preflight is not None:  # after the snapshot: the smoke test's load is not in it
            facts = await session.client.request(wire.PREFLIGHT, timeout=PREFLIGHT_TIMEOUT,
                                                 **preflight)
            reply["preflight"] = facts["facts"]
        if price_sent is not None:  # the price is extra: a box that cannot say still gets its status
            try:
                reply["price"] = (await session.client.reply(price_sent, timeout=30)).get("price")
            except (ProbeError, asyncio.TimeoutError) as exc:
                reply["notices"].append(_("the provider's price was not read: %s") % exc)
        return reply
    finally:
        if price_sent is not None:
            session.client.drop(price_sent)  # a snapshot that failed leaves it unread
        await session.close()
