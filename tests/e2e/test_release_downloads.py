"""Release downloads over a real session (issue 10): one artifact that cannot be saved
never blocks the others, and hostile names land under safe local names."""

import os
import sys

from tui.core.config import HostConfig
from tui.core.checks.release_actions import Release
from tui.core.transfer.download import PART_SUFFIX
from tui.remote import ssh
from tui.remote.session import RemoteSession

from tests.support.hostile import assert_inert, make_artifacts


async def test_one_failed_artifact_never_blocks_the_rest(sshbox, tmp_path):
    work = tmp_path / "work"
    make_artifacts(work / "ckpt")
    cfg = HostConfig(artifact_paths=[str(work)], search_paths=[str(work)],
                     temp_dirs=[str(tmp_path / "none")], python=sys.executable)
    session = RemoteSession(ssh.Target.parse("testbox", ssh_config=sshbox.ssh_config),
                            simulate="idle", remote_dir=sshbox.remote_dir)
    await session.open()
    try:
        rel = Release("testbox", session, cfg, None, "boot-x")
        rel.base = str(tmp_path / "downloads")
        await rel.gather()
        rel.items([], [], [], None, None)
        todo = rel.to_download()
        assert len(todo) >= 7
        # something already sits where the first file would land: a folder, not a file
        blocked = sorted(todo, key=lambda s: s["path"])[0]
        os.makedirs(blocked["local"])
        assert rel.space_problem() is None
        results = await rel.download_missing()
        by_status = {}
        for r in results:
            by_status.setdefault(r.status, []).append(r)
        assert [r.remote for r in by_status["refused"]] == [blocked["path"]]
        assert "not a regular file" in by_status["refused"][0].detail
        assert len(by_status["downloaded"]) == len(todo) - 1  # every other one
        for r in by_status["downloaded"]:
            assert os.path.isfile(r.local) and not os.path.exists(r.local + PART_SUFFIX)
            assert_inert(os.path.relpath(r.local, rel.base))
    finally:
        await session.close(stop_daemon=True)
