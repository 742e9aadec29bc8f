"""An SFTP download's read pipeline (issue 38): reads in flight from the link's round trip, the
bytes in order and whole, one stall timer, and the sha256 check still catching a bad block."""

import asyncio
import hashlib
import os
import stat
import types

import pytest

from tui.core.transfer import download as transfer
from tui.core.transfer import read_pipeline
from tui.core.transfer.link_sizes import BLOCK, MIN_READS, WINDOW


class FakeFile:
    def __init__(self, data, short=0, corrupt_at=None, hang_at=None, rtt=0.0):
        self.data, self.short, self.corrupt_at, self.hang_at, self.rtt = data, short, corrupt_at, hang_at, rtt
        self.outstanding = self.most = 0

    async def read(self, n, offset):
        self.outstanding += 1
        self.most = max(self.most, self.outstanding)
        try:
            if self.hang_at is not None and offset >= self.hang_at:
                await asyncio.sleep(3600)
            await asyncio.sleep(self.rtt)
            out = self.data[offset:offset + (min(n, self.short) if self.short else n)]
            if self.corrupt_at is not None and offset <= self.corrupt_at < offset + len(out):
                i = self.corrupt_at - offset
                out = out[:i] + bytes([out[i] ^ 1]) + out[i + 1:]
            return out
        finally:
            self.outstanding -= 1


class FakeSftp:
    """What download() uses of asyncssh's SFTP client."""

    def __init__(self, file, open_delay=0.0):
        self.file, self.open_delay = file, open_delay
        self.limits = types.SimpleNamespace(max_read_len=BLOCK)

    async def stat(self, path):
        return types.SimpleNamespace(permissions=stat.S_IFREG | 0o644)

    def open(self, path, mode, block_size=None):
        sftp = self

        class Opener:
            async def __aenter__(self):
                await asyncio.sleep(sftp.open_delay)
                return sftp.file

            async def __aexit__(self, *exc):
                return False
        return Opener()


def test_reads_in_flight_follow_the_round_trip():
    assert read_pipeline.reads_in_flight(0.0002, BLOCK) == MIN_READS  # loopback: a few MiB, not WINDOW
    assert read_pipeline.reads_in_flight(0.010, BLOCK) >= MIN_READS
    assert read_pipeline.reads_in_flight(0.100, BLOCK) * BLOCK >= 100e6 * 0.100  # 100 ms x 100 MB/s
    assert read_pipeline.reads_in_flight(0.300, BLOCK) == WINDOW // BLOCK  # never past the window
    assert read_pipeline.reads_in_flight(60.0, BLOCK) == WINDOW // BLOCK


async def _collect(f, start, size, in_flight, stall=5.0):
    return b"".join([d async for d in read_pipeline.blocks(f, start, size, 1000, in_flight, stall)])


def test_blocks_are_the_file_in_order_with_short_answers_completed():
    data = os.urandom(10_500)
    f = FakeFile(data, short=300)  # the server answers at most 300 bytes a read
    assert asyncio.run(_collect(f, 0, len(data), 4)) == data
    f = FakeFile(data)
    assert asyncio.run(_collect(f, 2500, len(data), 3)) == data[2500:]
    assert f.most <= 3


def test_a_box_that_stops_answering_is_a_timeout_not_a_hang():
    f = FakeFile(os.urandom(10_000), hang_at=4000)

    async def go():
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        with pytest.raises(asyncio.TimeoutError):
            await _collect(f, 0, 10_000, 2, stall=0.3)
        return loop.time() - t0
    assert 0.25 < asyncio.run(go()) < 3
    assert f.outstanding == 0  # every read left was cancelled


def test_a_cancelled_download_is_cancelled_not_a_timeout():
    f = FakeFile(os.urandom(10_000), hang_at=0)

    async def go():
        task = asyncio.ensure_future(_collect(f, 0, 10_000, 2, stall=30))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    asyncio.run(go())


def _download(tmp_path, data, sha, **kw):
    sftp = FakeSftp(FakeFile(data, **kw))
    return asyncio.run(transfer.download(sftp, "big.bin", str(tmp_path), len(data), 0,
                                         expected_sha=sha, reserve=0)), sftp


def test_the_bytes_written_are_the_box_file_and_verified(tmp_path):
    data = os.urandom(3 * BLOCK + 12345)  # blocks of many batches, a short last one
    r, sftp = _download(tmp_path, data, hashlib.sha256(data).hexdigest())
    assert r.status == "downloaded" and r.bytes == len(data)
    assert (tmp_path / "big.bin").read_bytes() == data
    assert sftp.file.most <= MIN_READS  # a loopback box: a few reads ahead, not the whole window


def test_a_corrupt_block_fails_the_sha256_and_nothing_is_kept(tmp_path):
    data = os.urandom(3 * BLOCK + 12345)
    r, _sftp = _download(tmp_path, data, hashlib.sha256(data).hexdigest(), corrupt_at=2 * BLOCK + 7)
    assert r.status == "corrupt" and "sha256 mismatch" in r.detail
    assert not (tmp_path / "big.bin").exists()
    assert not (tmp_path / ("big.bin" + transfer.PART_SUFFIX)).exists()


def test_a_long_round_trip_keeps_more_reads_in_flight(tmp_path):
    data = os.urandom(40 * BLOCK)
    sftp = FakeSftp(FakeFile(data, rtt=0.05), open_delay=0.05)
    r = asyncio.run(transfer.download(sftp, "big.bin", str(tmp_path), len(data), 0,
                                      expected_sha=hashlib.sha256(data).hexdigest(), reserve=0))
    assert r.status == "downloaded"
    assert sftp.file.most > MIN_READS  # 50 ms: the bandwidth-delay product, not the loopback few


def test_the_bytes_held_are_only_the_reads_in_flight(tmp_path):
    """Each block is written and hashed as it comes and dropped (issue 38): no batch gathers
    and no queue for a disk thread grows beside the reads in flight, however fast the box."""
    import tracemalloc
    data = os.urandom(64 * BLOCK)
    sftp = FakeSftp(FakeFile(data))
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        r = asyncio.run(transfer.download(sftp, "big.bin", str(tmp_path), len(data), 0,
                                          expected_sha=hashlib.sha256(data).hexdigest(), reserve=0))
        held = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert r.status == "downloaded" and (tmp_path / "big.bin").read_bytes() == data
    # the answers to MIN_READS reads, the one being written, and change for the rest
    assert held <= (MIN_READS + 2) * BLOCK, held / BLOCK


def test_a_partial_write_goes_on_where_it_stopped(tmp_path, monkeypatch):
    writes = []
    real = os.write

    def short(fd, data):  # a disk that takes at most 1000 bytes a call
        writes.append(len(data))
        return real(fd, bytes(data[:1000]))
    monkeypatch.setattr(transfer.os, "write", short)
    data = os.urandom(4500)
    with open(tmp_path / "out", "wb") as f:
        transfer.write_all(f.fileno(), data)
    assert (tmp_path / "out").read_bytes() == data
    assert writes == [4500, 3500, 2500, 1500, 500]
