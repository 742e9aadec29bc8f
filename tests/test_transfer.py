"""Downloads over real SFTP (sshd): resume, sha256, unsafe names, newer local files."""

import hashlib
import os
import time

import pytest

from tui.core.transfer import RefusedPath, download, local_path_for, sha256_file
from tui.remote import ssh


@pytest.mark.parametrize("name", ["../../evil", "/data/../../etc/passwd", "a/./b", "", "x\x00y", "a\\b"])
def test_unsafe_remote_names_are_refused(tmp_path, name):
    with pytest.raises(RefusedPath):
        local_path_for(str(tmp_path), name)


def test_safe_names_land_under_the_base(tmp_path):
    assert local_path_for(str(tmp_path), "/root/ckpt/m.pt") == str(tmp_path / "root" / "ckpt" / "m.pt")


@pytest.fixture
async def sftp(sshbox):
    conn = await ssh.connect(ssh.Target.parse("testbox", ssh_config=sshbox.ssh_config))
    async with conn.start_sftp_client() as client:
        yield client
    conn.close()


def make_remote(tmp_path, size=3 << 20):
    remote = tmp_path / "box" / "ckpt" / "model.pt"
    remote.parent.mkdir(parents=True)
    remote.write_bytes(os.urandom(size))
    st = remote.stat()
    return str(remote), st.st_size, st.st_mtime, hashlib.sha256(remote.read_bytes()).hexdigest()


async def test_interrupted_download_resumes_and_verifies(sftp, tmp_path):
    remote, size, mtime, sha = make_remote(tmp_path)
    base = str(tmp_path / "local")
    local = local_path_for(base, remote)
    os.makedirs(os.path.dirname(local))
    with open(remote, "rb") as f, open(local + ".part", "wb") as out:
        out.write(f.read(size // 3))  # what an interrupted run left behind
    seen = []
    r = await download(sftp, remote, base, size, mtime, expected_sha=sha,
                       progress=lambda done, total: seen.append(done))
    assert r.status == "resumed" and r.bytes == size - size // 3
    assert seen[0] == size // 3 and seen[-1] == size
    assert sha256_file(local) == sha and not os.path.exists(local + ".part")
    assert abs(os.stat(local).st_mtime - mtime) < 1
    again = await download(sftp, remote, base, size, mtime, expected_sha=sha)
    assert again.status == "up to date"


async def test_sha_mismatch_is_caught_and_nothing_is_replaced(sftp, tmp_path):
    remote, size, mtime, sha = make_remote(tmp_path)
    base = str(tmp_path / "local")
    r = await download(sftp, remote, base, size, mtime, expected_sha="0" * 64)
    assert r.status == "corrupt" and "sha256 mismatch" in r.detail
    local = local_path_for(base, remote)
    assert not os.path.exists(local) and not os.path.exists(local + ".part")


async def test_newer_local_file_is_not_overwritten(sftp, tmp_path):
    remote, size, mtime, sha = make_remote(tmp_path)
    base = str(tmp_path / "local")
    local = local_path_for(base, remote)
    os.makedirs(os.path.dirname(local))
    with open(local, "w") as f:
        f.write("my edited copy")
    os.utime(local, (time.time() + 60, time.time() + 60))
    r = await download(sftp, remote, base, size, mtime, expected_sha=sha)
    assert r.status == "kept newer local"
    assert open(local).read() == "my edited copy"


async def test_remote_name_escaping_the_folder_is_refused(sftp, tmp_path):
    r = await download(sftp, "../../evil", str(tmp_path / "local"), 10, 0)
    assert r.status == "refused"
    assert not (tmp_path / "evil").exists()
