"""Downloads of the release screen over a real session (issue 20): free space is checked
before anything is hashed, the box hashes each file while its bytes flow (not every artifact
before the first byte), and a download cut by a dropped SSH link resumes by itself."""

import asyncio
import hashlib
import os
import sys

from remote_probe import wire as protocol
from tui.core.config import HostConfig
from tui.core.checks.release_actions import Release
from tui.remote import ssh
from tui.remote.session import LIVE, RemoteSession

from tests.e2e.test_transfer import small_disk  # noqa: F401 - fixture


def plant(work, sizes):
    (work / "ckpt").mkdir(parents=True)
    shas = {}
    for i, size in enumerate(sizes):
        p = work / "ckpt" / ("epoch_%d.pt" % i)
        p.write_bytes(os.urandom(size))
        shas[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return shas


async def open_release(box, tmp_path, work, base):
    cfg = HostConfig(artifact_paths=[str(work)], search_paths=[str(work)],
                     temp_dirs=[str(tmp_path / "none")], python=sys.executable)
    session = RemoteSession(ssh.Target.parse("testbox", ssh_config=box.ssh_config),
                            simulate="idle", remote_dir=box.remote_dir)
    session.runner = asyncio.ensure_future(session.run())  # as the app runs it: reconnects
    for _ in range(600):
        if session.state == LIVE:
            break
        await asyncio.sleep(0.05)
    rel = Release("testbox", session, cfg, None, "boot-x")
    rel.base = str(base)
    await rel.gather()
    rel.items([], [], [], None, None)
    return session, rel


def record_requests(session, events):
    real = session.request

    async def request(kind, *args, **kw):
        if kind == protocol.SHA256:
            events.append(("sha256", tuple(kw.get("paths") or ())))
        return await real(kind, *args, **kw)
    session.request = request


async def test_bytes_flow_before_the_box_hashes_the_other_files(sshbox, tmp_path):
    work = tmp_path / "work"
    shas = plant(work, [3 << 20, 3 << 20, 3 << 20])
    session, rel = await open_release(sshbox, tmp_path, work, tmp_path / "dl")
    try:
        events = []
        record_requests(session, events)
        results = await rel.download_missing(
            lambda i, n, path, done, size, t, total: events.append(("bytes", path)) if done else None)
        assert sorted(r.status for r in results) == ["downloaded"] * 3
        for r in results:
            assert hashlib.sha256(open(r.local, "rb").read()).hexdigest() == shas[r.remote]
        hashes = [e for e in events if e[0] == "sha256"]
        assert all(len(paths) == 1 for _, paths in hashes), hashes  # one file at a time
        first_bytes = next(i for i, e in enumerate(events) if e[0] == "bytes")
        assert len([e for e in events[:first_bytes] if e[0] == "sha256"]) <= 1
    finally:
        await session.close(stop_daemon=True)
        session.runner.cancel()


async def test_no_space_is_said_before_anything_is_hashed(sshbox, tmp_path, small_disk):  # noqa: F811
    work = tmp_path / "work"
    plant(work, [12 << 20, 12 << 20])
    session, rel = await open_release(sshbox, tmp_path, work, small_disk / "dl")
    try:
        events = []
        record_requests(session, events)
        assert "free some space first" in rel.space_problem()
        results = await rel.download_missing()
        assert [r.status for r in results] == ["no space", "no space"]
        assert events == []  # the box was not asked to hash 24 MB for nothing
    finally:
        await session.close(stop_daemon=True)
        session.runner.cancel()


async def test_a_download_cut_by_a_dropped_link_resumes_by_itself(sshbox, tmp_path):
    work = tmp_path / "work"
    shas = plant(work, [160 << 20])
    session, rel = await open_release(sshbox, tmp_path, work, tmp_path / "dl")
    try:
        cut = []

        def progress(i, n, path, done, size, t, total):
            if not cut and done > size // 4:  # a quarter in: the link drops
                cut.append(done)
                for pid in sshbox.session_pids():
                    os.kill(pid, 9)
        results = await asyncio.wait_for(rel.download_missing(progress), 240)
        assert cut, "the download finished before the cut"
        assert [r.status for r in results] == ["resumed"], [(r.status, r.detail) for r in results]
        r = results[0]
        assert r.bytes < (160 << 20)  # it went on from the .part, not from 0
        assert hashlib.sha256(open(r.local, "rb").read()).hexdigest() == shas[r.remote]
        assert session.state == LIVE
    finally:
        await session.close(stop_daemon=True)
        session.runner.cancel()
