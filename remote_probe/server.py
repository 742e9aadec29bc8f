"""The daemon's unix socket: clients connect, send request lines, read replies and pushes.

Each request runs as its own task (a tmux install via apt takes minutes; pings, samples
and the next request go on meanwhile) and is always answered: a reply, or an error that
says why. The socket lives in a 0700 directory; a socket path deleted under a running
daemon is bound again (keep_bound).
"""

import asyncio
import logging
import os

from remote_probe import wire
from remote_probe.paths import ensure_private_dir, refuse_stranger

log = logging.getLogger("gputui.probe")

MAX_IN_FLIGHT = 32  # requests of one client running at once; more get an error reply
CLIENT_BUFFER_LIMIT = 4 << 20  # a client this far behind is dropped, not buffered forever
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


class Client:
    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer
        self.subscribed = False
        self.known_pids = set()
        self.tasks = set()  # this client's requests in progress; cancelled when it leaves
        self.backlog_owed = 0  # bytes of the backlog it asked for, allowed over the limit (send)


class SocketServer:
    """Connections and their requests. `handlers`: request type -> async (client, msg) ->
    reply fields, NO_REPLY, or RequestError; `hello()`: the first line every client reads."""

    def __init__(self, handlers, hello):
        self.handlers = handlers
        self.hello = hello
        self.clients = set()
        self.path = None  # set by bind(); in the hello, clients may connect to it directly
        self.binds = 0  # times the socket was bound (again after someone deleted it)
        self.listener = None

    def subscribers(self):
        return [c for c in self.clients if c.subscribed]

    def send(self, client, msg=None, line=None):
        if client.writer.is_closing():
            return
        queued = client.writer.transport.get_write_buffer_size()
        if queued <= CLIENT_BUFFER_LIMIT:
            client.backlog_owed = 0  # it has read its backlog down: the plain limit again
        elif queued > CLIENT_BUFFER_LIMIT + client.backlog_owed:
            log.warning("dropping a client that stopped reading")
            client.writer.close()
            return
        client.writer.write(line if line is not None else wire.encode(msg))

    def send_backlog(self, client, lines):
        """The samples a subscribing client asked for, queued at once (no tick slips in
        between). An hour of an 8-GPU box is 8 MB, more than CLIENT_BUFFER_LIMIT: held
        against that limit, a client reading as fast as it can was dropped as one that had
        stopped, and the reply to its next request went with it. So the backlog is allowed
        on top of the limit until the client has read it (bounded: history.py)."""
        if client.writer.is_closing():
            return
        client.writer.writelines(lines)
        client.backlog_owed = sum(map(len, lines))

    def send_reply(self, client, reply):
        """Encode a reply; one that cannot go on the wire becomes an error that can."""
        try:
            line = wire.encode(reply)
            if len(line) > wire.MAX_LINE:
                raise RequestError("the reply is too large to send (%d bytes)" % len(line))
        except Exception as exc:  # noqa: BLE001 - e.g. a value JSON cannot hold
            log.warning("reply to %r not sendable: %s", reply.get("id"), exc)
            line = wire.encode({"type": wire.ERROR, "id": reply.get("id"),
                                "error": "could not send the answer: %s" % exc})
        self.send(client, line=line)

    async def handle_client(self, reader, writer):
        """Read requests; each runs as its own task, so a slow one (a tmux install via
        apt, up to 600 s) never holds up pings, samples or the next request."""
        if refuse_stranger(writer, log):  # another user on the box (SO_PEERCRED)
            return
        client = Client(reader, writer)
        self.clients.add(client)
        self.send(client, self.hello())
        try:
            while True:
                try:
                    line = await reader.readline()
                except (ValueError, asyncio.LimitOverrunError):
                    self.send(client, {"type": wire.ERROR, "id": None, "error": "line too long"})
                    continue
                if not line:
                    break
                try:
                    msg = wire.decode(line)
                except wire.ProtocolError as exc:
                    log.warning("skipped a malformed line: %s", exc)
                    self.send(client, {"type": wire.ERROR, "id": None,
                                       "error": "malformed message: %s" % exc})
                    continue
                if len(client.tasks) >= MAX_IN_FLIGHT:
                    self.send(client, {"type": wire.ERROR, "id": request_id(msg),
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
            problem = wire.check_request(msg)
            if problem:
                raise RequestError(problem)
            result = await handler(client, msg)
        except asyncio.CancelledError:
            raise
        except RequestError as exc:
            reply = dict(exc.extra, type=wire.ERROR, id=rid, error=str(exc))
        except Exception as exc:  # a bug in one handler: say so, keep the daemon
            log.exception("request %s failed", kind)
            reply = {"type": wire.ERROR, "id": rid,
                     "error": "%s failed on the box: %s: %s" % (kind, type(exc).__name__, exc)}
        else:
            if result is NO_REPLY:
                return
            reply = {"type": wire.REPLY, "id": rid}
            reply.update(result or {})
        self.send_reply(client, reply)

    # -- the socket itself --------------------------------------------------------
    async def bind(self, path=None):
        if path is not None:
            self.path = os.path.abspath(path)
        ensure_private_dir(os.path.dirname(self.path))
        self.listener = await asyncio.start_unix_server(self.handle_client, path=self.path,
                                                        limit=wire.MAX_LINE)
        os.chmod(self.path, 0o600)
        self.binds += 1

    async def keep_bound(self):
        """A /tmp cleaner (systemd-tmpfiles) or a hasty `rm -rf ~/.cache` can delete the
        socket under a daemon that still holds the lock: no client could reach it and no new
        daemon could start. Bind the path again (clients already connected are unaffected)."""
        if self.path and self.listener is not None and not os.path.exists(self.path):
            log.warning("the socket %s was deleted; listening there again", self.path)
            self.listener.close()
            await self.bind()

    def close(self):
        if self.listener is not None:
            self.listener.close()
        for client in list(self.clients):
            client.writer.close()
        try:
            if self.path:
                os.unlink(self.path)
        except OSError:
            pass
