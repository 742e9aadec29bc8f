"""Downloads over real SFTP (sshd): resume, sha256, unsafe names, newer local files."""

import hashlib
import os
import time

import pytest

from tui.core.transfer.download import PART_SUFFIX, RefusedPath, download, local_name, local_path_for, sha256_file
from tui.remote import ssh


@pytest.mark.parametrize("name", ["../../evil", "/data/../../etc/passwd", "a/./b", "", "x\x00y"])
def test_unsafe_remote_names_are_refused(tmp_path, name):
    with pytest.raises(RefusedPath):
        local_path_for(str(tmp_path), name)


@pytest.mark.parametrize("name", ["a\\b", "..\\..\\evil", "x/..\\y.pt"])
def test_a_backslash_is_renamed_never_a_separator(tmp_path, name):
    local = local_path_for(str(tmp_path), name)
    assert local.startswith(str(tmp_path) + os.sep) and "\\" not in local


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
    with open(remote, "rb") as f, open(local + PART_SUFFIX, "wb") as out:
        out.write(f.read(size // 3))  # what an interrupted run left behind
    seen = []
    r = await download(sftp, remote, base, size, mtime, expected_sha=sha,
                       progress=lambda done, total: seen.append(done))
    assert r.status == "resumed" and r.bytes == size - size // 3
    assert seen[0] == size // 3 and seen[-1] == size
    assert sha256_file(local) == sha and not os.path.exists(local + PART_SUFFIX)
    assert abs(os.stat(local).st_mtime - mtime) < 1
    again = await download(sftp, remote, base, size, mtime, expected_sha=sha)
    assert again.status == "up to date"


async def test_sha_mismatch_is_caught_and_nothing_is_replaced(sftp, tmp_path):
    remote, size, mtime, sha = make_remote(tmp_path)
    base = str(tmp_path / "local")
    r = await download(sftp, remote, base, size, mtime, expected_sha="0" * 64)
    assert r.status == "corrupt" and "sha256 mismatch" in r.detail
    local = local_path_for(base, remote)
    assert not os.path.exists(local) and not os.path.exists(local + PART_SUFFIX)


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


async def test_a_users_file_named_like_gputuis_own_is_never_taken_for_them(sftp, tmp_path):
    """A walk-through lost `big.bin.part` (the user's own file, beside the pull's target) when
    it was resumed as a partial download and removed as corrupt, and a pulled `names.json`
    got gputui's name map written into it. gputui's names are its own now, and a box file
    bearing one lands under another name."""
    remote, size, mtime, sha = make_remote(tmp_path)
    base = str(tmp_path / "local")
    local = local_path_for(base, remote)
    os.makedirs(os.path.dirname(local))
    for mine in (local + ".part", os.path.join(os.path.dirname(local), "names.json")):
        with open(mine, "w") as f:
            f.write("my notes")
    r = await download(sftp, remote, base, size, mtime, expected_sha=sha)
    assert r.status == "downloaded" and sha256_file(local) == sha
    assert open(local + ".part").read() == "my notes"
    assert open(os.path.join(os.path.dirname(local), "names.json")).read() == "my notes"
    for reserved in ("x.bin" + PART_SUFFIX, ".gputui-names.json"):
        landed = local_name(reserved)
        assert landed != reserved and not landed.endswith(PART_SUFFIX) and landed != ".gputui-names.json"


async def test_a_box_name_with_a_backslash_is_downloaded_under_a_safe_name(sftp, tmp_path):
    """Push sends such names (a backslash is an ordinary character on Linux); pull refused them.
    They come down renamed (the backslash would be a folder separator on Windows), mapped back."""
    box = tmp_path / "box"
    box.mkdir()
    remote = box / "run\\epoch 3.pt"
    remote.write_bytes(b"weights")
    st = remote.stat()
    base = str(tmp_path / "local")
    r = await download(sftp, str(remote), base, st.st_size, st.st_mtime)
    assert r.status == "downloaded", r
    assert "\\" not in os.path.basename(r.local) and r.local.endswith(".pt")
    assert open(r.local, "rb").read() == b"weights"
    assert remote_for(base, r.local) == str(remote)


async def test_a_replaced_local_copy_is_kept_under_a_name_no_box_file_takes(sftp, tmp_path):
    """A stale local copy goes beside as NAME.gputui-old (.1, ... when taken): as NAME.old it
    collided with the box's own g.txt.old, pulled in the same run (overwritten once; then,
    pulled after g.txt, it pushed the backup on to g.txt.old.old)."""
    remote, size, mtime, sha = make_remote(tmp_path)
    base = str(tmp_path / "local")
    local = local_path_for(base, remote)
    os.makedirs(os.path.dirname(local))
    for path, text in ((local, "stale copy"), (local + ".old", "the box's own .old file"),
                       (local + ".gputui-old", "an earlier backup")):
        with open(path, "w") as f:
            f.write(text)
        os.utime(path, (mtime - 60, mtime - 60))
    r = await download(sftp, remote, base, size, mtime, expected_sha=sha)
    assert r.status == "downloaded" and sha256_file(local) == sha
    assert open(local + ".old").read() == "the box's own .old file"
    assert open(local + ".gputui-old").read() == "an earlier backup"
    assert open(local + ".gputui-old.1").read() == "stale copy"
    assert os.path.basename(local) + ".gputui-old.1" in r.detail
    assert local_name("x.bin.gputui-old") != "x.bin.gputui-old"  # a box file never lands as one


async def test_an_older_copy_with_the_same_bytes_is_not_fetched_again(sftp, tmp_path):
    """A copy restored or touched here (older, same size, same bytes) was downloaded again and
    a duplicate kept beside it; now both sides hash it and only its time is set. The same
    size with other bytes still downloads (and keeps the old copy)."""
    remote, size, mtime, sha = make_remote(tmp_path)
    base = str(tmp_path / "local")
    local = local_path_for(base, remote)
    os.makedirs(os.path.dirname(local))
    with open(remote, "rb") as f, open(local, "wb") as out:
        out.write(f.read())
    os.utime(local, (mtime - 3600, mtime - 3600))
    asked = []

    async def box_sha():
        asked.append(1)
        return sha
    r = await download(sftp, remote, base, size, mtime, expected_sha=box_sha,
                       progress=lambda done, total: asked.append(done))
    assert r.status == "up to date" and r.bytes == 0 and asked == [1]  # no byte asked for
    assert abs(os.stat(local).st_mtime - mtime) < 1 and not os.path.exists(local + ".gputui-old")
    with open(local, "r+b") as f:
        f.write(b"\x00" * 16)  # same size, other bytes
    os.utime(local, (mtime - 3600, mtime - 3600))
    r = await download(sftp, remote, base, size, mtime, expected_sha=box_sha)
    assert r.status == "downloaded" and sha256_file(local) == sha and os.path.exists(local + ".gputui-old")


async def test_remote_name_escaping_the_folder_is_refused(sftp, tmp_path):
    r = await download(sftp, "../../evil", str(tmp_path / "local"), 10, 0)
    assert r.status == "refused"
    assert not (tmp_path / "evil").exists()


# -- hostile names, special files, full disks (issue 10) ------------------------------
from tui.core.transfer.download import NAME_BYTES, NotRegular, remote_for  # noqa: E402

from tests.support.hostile import BAD_UTF8, LONG, LONG_UTF8, NAMES, assert_inert, make_artifacts  # noqa: E402


@pytest.mark.parametrize("name", [LONG, LONG_UTF8, "x" * 255, BAD_UTF8.decode("utf-8", "surrogateescape")]
                         + NAMES)
def test_local_names_fit_with_their_suffixes_and_are_inert(name):
    local = local_name(name)
    assert len((local + ".corrupt-1764000000").encode()) <= 255
    assert_inert(local)
    local.encode("utf-8")  # a name any local disk takes (no surrogates)
    assert local_name(name) == local  # the same name always lands in the same place
    if len(name.encode("utf-8", "surrogateescape")) <= NAME_BYTES and name.isprintable():
        assert local == name  # ordinary names are left alone


def test_long_names_that_share_a_prefix_do_not_collide():
    a, b = "p" * 240 + "-epoch1.pt", "p" * 240 + "-epoch2.pt"
    assert local_name(a) != local_name(b)
    assert local_name(a).endswith(".pt") and "~" in local_name(a)


def test_a_fifo_is_never_hashed(tmp_path):
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    with pytest.raises(NotRegular):
        sha256_file(str(fifo))
    assert time.monotonic() - t0 < 5


async def test_hostile_names_download_under_safe_local_names_that_map_back(sftp, tmp_path):
    made = make_artifacts(tmp_path / "box")
    base = str(tmp_path / "local")
    for kind in ("long", "long_utf8", "bad_utf8", "osc52", "clear", "bidi", "markup", "click", "plain"):
        raw = made[kind]
        remote = raw.decode("utf-8", "surrogateescape")
        st = os.stat(raw)
        with open(raw, "rb") as f:
            data = f.read()
        r = await download(sftp, remote, base, st.st_size, st.st_mtime,
                           expected_sha=hashlib.sha256(data).hexdigest())
        assert r.status == "downloaded", (kind, r)
        with open(r.local, "rb") as f:
            assert f.read() == data
        assert_inert(os.path.basename(r.local))
        if os.path.basename(r.local) != os.path.basename(remote):
            assert remote_for(base, r.local) == remote  # the name map (NAMES_FILE) maps it back
        assert not os.path.exists(r.local + PART_SUFFIX)


async def test_a_file_swapped_for_a_fifo_is_refused_and_the_next_still_downloads(sftp, tmp_path):
    made = make_artifacts(tmp_path / "box")
    base = str(tmp_path / "local")
    fifo = made["fifo"].decode()
    t0 = time.monotonic()
    r = await download(sftp, fifo, base, 1000, time.time(), stall_seconds=20)
    assert r.status == "refused" and "regular file" in r.detail
    loop = await download(sftp, made["loop"].decode(), base, 10, time.time(), stall_seconds=20)
    # a symlink loop: no byte came, so no partial file is promised
    assert loop.status == "failed" and "nothing was kept" in loop.detail and PART_SUFFIX not in loop.detail
    assert time.monotonic() - t0 < 15
    plain = made["plain"].decode()
    st = os.stat(plain)
    ok = await download(sftp, plain, base, st.st_size, st.st_mtime)
    assert ok.status == "downloaded"


@pytest.fixture
def small_disk(tmp_path):
    """A real 16 MiB filesystem (tmpfs) for the laptop's download folder."""
    import subprocess
    mnt = tmp_path / "small"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)],
                                           stderr=subprocess.DEVNULL).returncode != 0:
        pytest.skip("needs root to mount a small tmpfs")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)])


async def test_free_space_is_checked_before_a_download(sftp, tmp_path, small_disk):
    remote, size, mtime, sha = make_remote(tmp_path, size=12 << 20)
    r = await download(sftp, remote, str(small_disk / "dl"), size, mtime, expected_sha=sha)
    assert r.status == "no space" and "free" in r.detail
    assert not any(n.endswith(PART_SUFFIX) for _, _, files in os.walk(small_disk) for n in files)


async def test_a_disk_that_fills_mid_download_says_how_to_resume_then_resumes(sftp, tmp_path, small_disk):
    remote, size, mtime, sha = make_remote(tmp_path, size=8 << 20)
    base = str(small_disk / "dl")
    filler = small_disk / "filler"

    def fill_once(done, total):
        if not filler.exists():  # after the space check, another program takes 12 of 16 MiB
            filler.write_bytes(b"\0" * (12 << 20))
    r = await download(sftp, remote, base, size, mtime, expected_sha=sha, progress=fill_once, reserve=0)
    assert r.status == "failed" and "disk is full" in r.detail
    assert PART_SUFFIX in r.detail and "resume" in r.detail and "delete it" in r.detail
    filler.unlink()
    again = await download(sftp, remote, base, size, mtime, expected_sha=sha, reserve=0)
    assert again.status == "resumed" and 0 < again.bytes < size and sha256_file(again.local) == sha


async def test_push_checks_free_space_on_the_disk_dest_is_on(sftp, tmp_path):
    """Push's SFTP side asked DEST's parent: a DEST that is a disk of its own was checked on
    the wrong one, and a DEST under folders not made yet was not checked at all. Now it is
    DEST, or the nearest folder above it that exists (the probe channel's rule)."""
    from tui.remote.transfer.push import SftpBox
    box = SftpBox(sftp)
    deep = tmp_path / "not" / "made" / "yet"
    got = await box.free(str(deep))
    v = os.statvfs(tmp_path)
    assert got is not None and abs(got - v.f_bavail * v.f_frsize) < (64 << 20)
    assert await box.free("/") is not None
