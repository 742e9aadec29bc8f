"""Files gputui writes on the laptop are 0600 and its dirs 0700 whatever the umask (issue 20):
downloaded checkpoints (and their .part and name map), the crash log, --log, the probe-sockets
cache, captured environments; config and ledger are covered in their own tests."""

import contextlib
import os
import stat
import subprocess
import sys

import pytest

from tui.core.session import probe_sockets
from tui.core.crash import write_crash_log
from tui.core.private import make_private_dir, write_private_file
from tui.core.transfer.download import download, local_path_for

from tests.e2e.test_transfer import make_remote, sftp  # noqa: F401 - fixture

SECRET = "ab" * 32  # the daemon key a command-path hello gave (wire/challenge.py)


@contextlib.contextmanager
def umask(mask):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_helpers_under_umask_022(tmp_path):
    with umask(0o022):
        d = make_private_dir(str(tmp_path / "a" / "b" / "c"))
        write_private_file(os.path.join(d, "f"), "x")
    for sub in ("a", "a/b", "a/b/c"):
        assert mode(tmp_path / sub) == 0o700, sub
    assert mode(tmp_path / "a/b/c/f") == 0o600
    existing = tmp_path / "open"
    existing.mkdir(mode=0o755)
    make_private_dir(str(existing))
    assert mode(existing) == 0o700  # an existing dir of ours is narrowed


async def test_a_downloaded_checkpoint_is_private(sftp, tmp_path):  # noqa: F811
    remote, size, mtime, sha = make_remote(tmp_path)
    base = str(tmp_path / "downloads" / "box" / "session-1")
    with umask(0o022):
        r = await download(sftp, remote, base, size, mtime, expected_sha=sha)
    assert r.status == "downloaded"
    local = local_path_for(base, remote)
    assert mode(local) == 0o600
    d = os.path.dirname(local)
    while d != str(tmp_path):
        assert mode(d) == 0o700, d
        d = os.path.dirname(d)


def test_crash_log_probe_sockets_and_debug_log_are_private(isolated_dirs, tmp_path):
    with umask(0o022):
        path = write_crash_log(ValueError("boom"))
        probe_sockets.remember("box", "/tmp/x/probe.sock", "/tmp/x", secret=SECRET)
    assert mode(path) == 0o600 and mode(os.path.dirname(path)) == 0o700
    assert mode(probe_sockets.cache_path()) == 0o600
    assert mode(os.path.dirname(probe_sockets.cache_path())) == 0o700
    log = tmp_path / "debug.log"
    r = subprocess.run(["sh", "-c", "umask 022; exec \"$@\"", "sh", sys.executable, "-m", "tui",
                        "--log", str(log), "ledger"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    assert log.exists() and mode(log) == 0o600


@pytest.mark.parametrize("name", ["pip-freeze.txt", "conda-env.yml"])
def test_written_text_is_private(tmp_path, name):
    with umask(0o002):
        write_private_file(str(tmp_path / "env" / name), "torch==2\n")
    assert mode(tmp_path / "env" / name) == 0o600 and mode(tmp_path / "env") == 0o700


def test_a_shared_or_home_dir_is_never_narrowed(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    make_private_dir(str(shared))
    assert mode(shared) == 0o1777  # like /tmp: others' files live there
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    os.chmod(home, 0o755)
    monkeypatch.setenv("HOME", str(home))
    make_private_dir(str(home))
    assert mode(home) == 0o755
