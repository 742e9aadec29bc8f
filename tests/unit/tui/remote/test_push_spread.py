"""The segment plan of a big file spread over several SFTP channels, and how a cut resumes."""

import threading

import pytest

from tui.remote.transfer import push_spread as sp

MB = 1 << 20
BLOCK = 255 << 10


@pytest.mark.parametrize("size,n,want", [
    (10 * MB, 3, [(0, 10 * MB)]),  # under SPREAD_MIN: one stream
    (sp.SPREAD_MIN, 1, [(0, sp.SPREAD_MIN)]),  # one channel
])
def test_small_or_single_is_one_segment(size, n, want):
    assert sp.segments(size, n, BLOCK) == want


@pytest.mark.parametrize("size", [sp.SPREAD_MIN, 200 * MB, 200 * MB + 1, 1000 * MB + 12345])
@pytest.mark.parametrize("n", [2, 3, 4])
def test_segments_cover_the_file_once_on_write_boundaries(size, n):
    segs = sp.segments(size, n, BLOCK)
    assert 2 <= len(segs) <= n
    assert segs[0][0] == 0 and segs[-1][1] == size
    assert all(a[1] == b[0] for a, b in zip(segs, segs[1:]))
    assert all(start % BLOCK == 0 for start, _end in segs)


SEGS = [(0, 100), (100, 200), (200, 250)]


@pytest.mark.parametrize("part0,parts,want", [
    (0, [None, None], [0, 0, 0]),  # nothing there
    (40, [30, None], [40, 30, 0]),  # cut mid-send: each segment from its own part
    (100, [100, 50], [100, 100, 50]),  # all there: join pending
    (150, [100, 50], [100, 100, 50]),  # cut mid-join: parts still beside, joined again
    (200, [None, 50], [100, 100, 50]),  # segment 1 joined and removed, segment 2 not yet
    (250, [None, None], None),  # a one-stream part past segment 0: continue it as one stream
    (120, [None, None], None),
    (40, [130, 60], [40, 0, 0]),  # parts longer than their segment: stale, start over
])
def test_resume_points(part0, parts, want):
    assert sp.resume_points(SEGS, part0, parts) == want


@pytest.mark.parametrize("points,parts,want", [
    ([0, 0, 0], [None, None], [1, 2]),
    ([100, 100, 50], [None, 50], [2]),  # segment 1 is in the first part already
    ([100, 100, 50], [100, 50], [1, 2]),  # copied again: copy-data of the same bytes is harmless
])
def test_joins(points, parts, want):
    assert sp.joins(SEGS, points, parts) == want


def test_range_reader_reads_exactly_its_range(tmp_path):
    f = tmp_path / "x"
    f.write_bytes(bytes(range(256)) * 4)
    r = sp.RangeReader(str(f), 10, 300)
    got = b"".join(iter(lambda: r.read(64), b""))
    r.close()
    assert got == f.read_bytes()[10:300]


def test_file_sha_stops_when_told(tmp_path):
    import hashlib
    f = tmp_path / "x"
    f.write_bytes(b"a" * (9 << 20))
    assert sp.file_sha(str(f), threading.Event()) == hashlib.sha256(b"a" * (9 << 20)).hexdigest()
    stop = threading.Event()
    stop.set()
    assert sp.file_sha(str(f), stop) is None


class FakeClient:
    def __init__(self):
        self.exited = False

    def exit(self):
        self.exited = True


def test_channels_all_or_none_and_closed_at_the_end():
    import asyncio
    made = []

    async def opener(fail_on=None):
        if len(made) == fail_on:
            made.append(None)
            raise OSError("channel refused")
        c = FakeClient()
        made.append(c)
        return c

    async def run(fail_on):
        ch = sp.Channels(lambda: opener(fail_on))
        ch.warm(2)
        got = await ch.get(2)
        await ch.close()
        return got
    got = asyncio.run(run(None))
    assert got == made and all(c.exited for c in made)  # closed once the push is over
    made.clear()
    assert asyncio.run(run(1)) is None  # one refused: the file goes as one stream
    assert made[0].exited  # and the one that opened is not left behind
    assert asyncio.run(sp.Channels(None).get(2)) is None  # no connection to open more on
