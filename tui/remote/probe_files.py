"""Files through the probe channel, for boxes without SFTP (PTY-only proxies, or an sshd
that refuses the subsystem): SFTP-shaped reads (``open(path).read(n, offset)``, what
``tui.core.transfer.download`` needs), each a chunked, pipelined ``file_read`` request to the
daemon (docs/architecture.md, "The wire protocol")."""

import asyncio
import base64

from remote_probe import wire
from tui.remote.probe_client import ProbeError


class ProbeFiles:
    """SFTP-shaped reads through the probe channel: ``open(path).read(n, offset)``,
    what ``tui.core.transfer.download`` needs. Chunks are pipelined."""

    CHUNK = 256 << 10
    IN_FLIGHT = 8

    def __init__(self, request):
        self._request = request  # session.request

    def open(self, path, mode="rb", **_sftp_options):
        if mode != "rb":
            raise ValueError("the probe channel only reads files")
        return _ProbeFile(self, path)


class _ProbeFile:
    def __init__(self, files, path):
        self.files, self.path = files, path

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
        gate = asyncio.Semaphore(self.files.IN_FLIGHT)
        step = self.files.CHUNK
        spans = [(o, min(step, offset + size - o)) for o in range(offset, offset + size, step)]
        pieces = await asyncio.gather(*(self._chunk(gate, o, n) for o, n in spans))
        out = bytearray()
        for (_offset, n), piece in zip(spans, pieces):
            out += piece
            if len(piece) < n:  # end of file
                break
        return bytes(out)
