"""Files through the probe channel, for boxes without SFTP (PTY-only proxies, or an sshd
that refuses the subsystem): SFTP-shaped reads (``open(path).read(n, offset)``, what
``tui.core.transfer.download`` needs), each a chunked, pipelined ``file_read`` request to the
daemon (docs/architecture.md, "The wire protocol")."""

import asyncio
import base64
import posixpath

from remote_probe import wire
from tui.remote.probe.client import ProbeError


MAX_IN_FLIGHT = 32  # probe-channel chunks per read call (x the transfer's reads in flight)


class ProbeFiles:
    """SFTP-shaped reads through the probe channel: ``open(path).read(n, offset)``,
    what ``tui.core.transfer.download`` needs. Chunks are pipelined."""

    CHUNK = 256 << 10
    IN_FLIGHT = 8

    def __init__(self, request):
        self._request = request  # session.request
        self.base = None  # where relative names are read from (SFTP's chdir); None: home

    def open(self, path, mode="rb", max_requests=IN_FLIGHT, **_sftp_options):
        if mode != "rb":
            raise ValueError("the probe channel only reads files (writes: tui.remote.transfer.push_probe)")
        if self.base and not path.startswith("/"):
            path = posixpath.join(self.base, path)
        # as many bytes in flight as an SFTP read call (tui.core.transfer.download.SFTP_OPTIONS), capped:
        # every chunk is a request the daemon holds in memory base64-encoded
        block = _sftp_options.get("block_size", self.CHUNK)
        return _ProbeFile(self, path, max(1, min(MAX_IN_FLIGHT, max_requests * block // self.CHUNK)))


class _ProbeFile:
    def __init__(self, files, path, in_flight=ProbeFiles.IN_FLIGHT):
        self.files, self.path, self.in_flight = files, path, in_flight

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        return False

    async def _chunk(self, gate, offset, size):
        async with gate:
            reply = await self.files._request(wire.FILE_READ, timeout=60, path=self.path,
                                              offset=offset, size=size)
        data = reply.get("data")
        if not isinstance(data, str):
            raise ProbeError("bad file_read reply for %s" % self.path)
        return base64.b64decode(data)

    async def read(self, size, offset):
        gate = asyncio.Semaphore(self.in_flight)
        step = self.files.CHUNK
        spans = [(o, min(step, offset + size - o)) for o in range(offset, offset + size, step)]
        pieces = await asyncio.gather(*(self._chunk(gate, o, n) for o, n in spans))
        out = bytearray()
        for (_offset, n), piece in zip(spans, pieces):
            out += piece
            if len(piece) < n:  # end of file
                break
        return bytes(out)
