"""The client end of the probe protocol, over any line stream (an SSH exec channel).

Replies are matched to requests by id; pushed messages go to a callback. Every line
passes the protocol boundary (``wire.decode_clean``): a malformed, oversized or
too-deeply nested line is logged, counted and skipped; values of the wrong type, not
finite or out of range are cleared to None and counted. The connection goes on, and
``take_notice()`` hands the UI one sentence about it, once.
"""

import asyncio
import itertools
import logging
import time
from typing import NamedTuple

from remote_probe import __version__, wire
from tui.core.i18n import _, ngettext

log = logging.getLogger("gputui.client")

# python's start, the probe's unpacking and the daemon's first start on a box whose cores
# are all busy; the box's attach gives up on a daemon it started before this (SPAWN_PATIENCE)
HELLO_TIMEOUT = 45.0
REQUEST_TIMEOUT = 15.0


class ProbeError(Exception):
    """The probe refused a request or could not be talked to."""


class IncompatibleProbe(ProbeError):
    """The probe's hello speaks another protocol: redeploy, do not retry as is."""


class ProbeStartError(ProbeError):
    """The probe said why it cannot start (its error line before any hello)."""

    def __init__(self, text, exit_code=None):
        super().__init__(text)
        self.exit_code = exit_code


HELLO_MARK = b'{"type":"hello"'


def hello_in_noise(line):
    """The hello message inside a line that has noise glued in front of it (a banner
    printed without a newline by ~/.bashrc), or None."""
    at = line.rfind(HELLO_MARK)
    if at <= 0:
        return None
    try:
        msg = wire.decode_clean(line[at:])
    except wire.ProtocolError:
        return None
    return msg if msg["type"] == wire.HELLO else None


class ProbeClient:
    def __init__(self, reader, writer, on_push=None):
        self.reader, self.writer = reader, writer
        self.on_push = on_push or (lambda msg: None)
        self.ack_now = None  # sends the TCP ACK due now (tui.remote.tcp_ack); set by the session
        self.ids = itertools.count(1)
        self.pending = {}
        self.hello = None
        self.skipped = 0  # lines dropped whole
        self.cleaned = wire.Report()  # values cleared or cut inside kept messages
        self.last_error = None
        self.last_skip = None  # why the last dropped line was dropped
        self._noticed = False
        self._reader_task = None
        self.closed = asyncio.Event()

    async def start(self, noise=True):
        """Read the probe's hello, check the protocol, send ours, start reading.

        `noise`: lines before the hello are skipped (a chatty shell over exec or a PTY);
        without, the first line must be the hello (a socket has no shell: anything else
        there is another program, given up on at once)."""
        deadline = time.monotonic() + HELLO_TIMEOUT  # for all the noise before it together
        while True:
            line = await asyncio.wait_for(self.reader.readline(),
                                          max(0.1, deadline - time.monotonic()))
            if not line:
                raise ProbeError("the probe closed the channel before saying hello")
            try:
                msg = wire.decode_clean(line, self.cleaned)
            except wire.ProtocolError as exc:
                if not noise:
                    raise ProbeError("not a gputui probe: %s" % exc)
                # e.g. a noisy .bashrc printing a banner: skip until the hello
                msg = hello_in_noise(line)
                if msg is None:
                    self._skip(line, exc)
                    continue
            if msg["type"] == wire.HELLO:
                break
            if msg["type"] == wire.ERROR and msg.get("id") is None:
                code = msg.get("exit")
                raise ProbeStartError(str(msg.get("error") or "the probe could not start"),
                                      code if isinstance(code, int) else None)
            if not noise:
                raise ProbeError("not a gputui probe: %s before its hello" % msg["type"])
            self._skip(line, "expected hello first")
        problem = wire.check_compatible(msg)
        if problem:
            raise IncompatibleProbe(problem)
        self.hello = msg
        self._write(wire.hello("gputui", __version__, ("samples", "backfill")))
        self._reader_task = asyncio.ensure_future(self._read_loop())
        return msg

    def hello_seq(self):
        """The daemon's last sample as its hello said, 0 when it said none a subscribe may name."""
        seq = (self.hello or {}).get("last_seq")
        return seq if wire.is_int(seq) and 0 <= seq < 1 << 53 else 0

    def _skip(self, line, why):
        self.skipped += 1
        self.last_error = self.last_skip = str(why)
        log.warning("skipped a malformed probe line (%s): %.120r", why, line[:200])

    def notice(self):
        """One sentence on what the boundary dropped or cleared so far, or None."""
        return boundary_notice(self.skipped, self.cleaned.count,
                               self.last_skip, self.cleaned.examples)

    def take_notice(self):
        """notice(), the first time there is one; None before and after (shown once)."""
        if self._noticed:
            return None
        text = self.notice()
        if text:
            self._noticed = True
        return text

    def send_first(self, kind, rid, **params):
        """Send a request before the hello is read (the direct path's proof rides with the
        channel's first bytes); -> the future of its reply, settled by the reading loop."""
        msg = dict(params, type=kind, id=rid)
        fut = asyncio.get_running_loop().create_future()
        self.pending[rid] = fut
        self._write(msg)
        return fut

    def _write(self, msg):
        self.writer.write(wire.encode(msg))

    async def _read_loop(self):
        try:
            while True:
                line = await self.reader.readline()
                if not line:
                    break
                try:
                    msg = wire.decode_clean(line, self.cleaned)
                except wire.ProtocolError as exc:
                    self._skip(line, exc)
                    continue
                kind = msg["type"]
                rid = msg.get("id")
                if kind in wire.REPLY_TYPES and _hashable(rid) and rid in self.pending:
                    fut = self.pending.pop(rid)
                    if not fut.done():
                        fut.set_result(msg)
                    if self.pending and self.ack_now is not None:
                        self.ack_now()  # the next reply may be waiting for this one's ACK (tcp_ack)
                elif kind == wire.REPLY:
                    log.info("a reply to no open request (id %.40r): late, dropped", rid)
                elif kind == wire.ERROR:
                    self.last_error = msg.get("error")
                    log.warning("probe error: %s", msg.get("error"))
                else:
                    try:
                        self.on_push(msg)
                    except Exception:  # a display bug must not kill the stream
                        log.exception("handling a pushed %s failed", kind)
        except (asyncio.IncompleteReadError, ConnectionError, OSError) as exc:
            log.info("probe stream ended: %s", exc)
        except Exception as exc:  # asyncssh raises its own errors on channel loss
            log.info("probe stream ended: %r", exc)
        finally:
            for fut in self.pending.values():
                if not fut.done():
                    fut.set_exception(ProbeError("connection to the probe was lost"))
            self.pending.clear()
            self.closed.set()

    def send(self, kind, **params):
        """Send a request now, its reply awaited later with `reply(sent)`: requests sent
        together cost one round trip between them, not one each (issue 26). May be called
        before start() (the reading loop settles them once it runs)."""
        if self.closed.is_set():
            raise ProbeError("connection to the probe was lost")
        msg = {"type": kind}
        msg.update(params)
        problem = wire.check_request(msg)
        if problem:  # the box would refuse it too: say so without a round trip
            raise ProbeError(problem)
        rid = next(self.ids)
        msg["id"] = rid
        fut = asyncio.get_running_loop().create_future()
        self.pending[rid] = fut
        self._write(msg)
        return Sent(kind, rid, fut)

    async def reply(self, sent, timeout=REQUEST_TIMEOUT):
        """The reply to a request made with send(); ProbeError when the box refused it."""
        try:
            reply = await asyncio.wait_for(sent.future, timeout)
        finally:
            self.pending.pop(sent.rid, None)
        if reply["type"] == wire.ERROR:
            raise ProbeError(reply.get("error") or "request %s failed" % sent.kind)
        return reply

    def drop(self, sent):
        """Forget a request whose reply will not be used: no "exception never retrieved"
        warning when the channel is lost before it came."""
        self.pending.pop(sent.rid, None)
        sent.future.cancel()  # also on a settled future: asyncio then logs nothing about it

    async def request(self, kind, timeout=REQUEST_TIMEOUT, **params):
        return await self.reply(self.send(kind, **params), timeout)

    async def close(self):
        if self._reader_task:
            self._reader_task.cancel()
        try:
            self.writer.write_eof()
        except Exception:  # already gone
            pass


class Sent(NamedTuple):
    """A request on its way (ProbeClient.send): what it asked, its id, its reply's future."""

    kind: str
    rid: int
    future: "asyncio.Future[dict]"


def _hashable(value):
    return isinstance(value, (int, str)) or value is None


def boundary_notice(skipped, cleared, last_error=None, examples=()):
    """The one-line notice about bad probe data. Plain function: counts in, text out."""
    parts = []
    if skipped:
        parts.append(ngettext("skipped %d malformed line", "skipped %d malformed lines", skipped) % skipped
                     + (_(" (last: %s)") % str(last_error)[:120] if last_error else ""))
    if cleared:
        parts.append(ngettext("cleared %d bad value", "cleared %d bad values", cleared) % cleared
                     + (_(" (e.g. %s)") % examples[0][:120] if examples else ""))
    if not parts:
        return None
    return _("The probe sent data gputui could not use: %s. Shown as not available; the connection "
             "goes on.") % "; ".join(parts)
