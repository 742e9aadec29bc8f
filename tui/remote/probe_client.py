"""The client end of the probe protocol, over any line stream (an SSH exec channel).

Replies are matched to requests by id; pushed messages go to a callback. A malformed
or oversized line is logged, counted and skipped; the connection goes on.
"""

import asyncio
import itertools
import logging

from remote_probe import __version__, protocol

log = logging.getLogger("gputui.client")

HELLO_TIMEOUT = 20.0
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
        msg = protocol.decode(line[at:])
    except protocol.ProtocolError:
        return None
    return msg if msg["type"] == protocol.HELLO else None


class ProbeClient:
    def __init__(self, reader, writer, on_push=None):
        self.reader, self.writer = reader, writer
        self.on_push = on_push or (lambda msg: None)
        self.ids = itertools.count(1)
        self.pending = {}
        self.hello = None
        self.skipped = 0
        self.last_error = None
        self._reader_task = None
        self.closed = asyncio.Event()

    async def start(self):
        """Read the probe's hello, check the protocol, send ours, start reading."""
        while True:
            line = await asyncio.wait_for(self.reader.readline(), HELLO_TIMEOUT)
            if not line:
                raise ProbeError("the probe closed the channel before saying hello")
            try:
                msg = protocol.decode(line)
            except protocol.ProtocolError as exc:
                # e.g. a noisy .bashrc printing a banner: skip until the hello
                msg = hello_in_noise(line)
                if msg is None:
                    self._skip(line, exc)
                    continue
            if msg["type"] == protocol.HELLO:
                break
            if msg["type"] == protocol.ERROR and msg.get("id") is None:
                code = msg.get("exit")
                raise ProbeStartError(str(msg.get("error") or "the probe could not start"),
                                      code if isinstance(code, int) else None)
            self._skip(line, "expected hello first")
        problem = protocol.check_compatible(msg)
        if problem:
            raise IncompatibleProbe(problem)
        self.hello = msg
        self._write(protocol.hello("gputui", __version__, ("samples", "backfill")))
        self._reader_task = asyncio.ensure_future(self._read_loop())
        return msg

    def _skip(self, line, why):
        self.skipped += 1
        self.last_error = str(why)
        log.warning("skipped a malformed probe line (%s): %.120r", why, line)

    def _write(self, msg):
        self.writer.write(protocol.encode(msg))

    async def _read_loop(self):
        try:
            while True:
                line = await self.reader.readline()
                if not line:
                    break
                try:
                    msg = protocol.decode(line)
                except protocol.ProtocolError as exc:
                    self._skip(line, exc)
                    continue
                kind = msg["type"]
                if kind in protocol.REPLY_TYPES and msg.get("id") in self.pending:
                    fut = self.pending.pop(msg["id"])
                    if not fut.done():
                        fut.set_result(msg)
                elif kind == protocol.ERROR:
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

    async def request(self, kind, timeout=REQUEST_TIMEOUT, **params):
        if self.closed.is_set():
            raise ProbeError("connection to the probe was lost")
        rid = next(self.ids)
        fut = asyncio.get_running_loop().create_future()
        self.pending[rid] = fut
        msg = {"type": kind, "id": rid}
        msg.update(params)
        self._write(msg)
        try:
            reply = await asyncio.wait_for(fut, timeout)
        finally:
            self.pending.pop(rid, None)
        if reply["type"] == protocol.ERROR:
            raise ProbeError(reply.get("error") or "request %s failed" % kind)
        return reply

    async def close(self):
        if self._reader_task:
            self._reader_task.cancel()
        try:
            self.writer.write_eof()
        except Exception:  # already gone
            pass
