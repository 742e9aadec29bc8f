"""pull's walk of the box (tui.remote.transfer.pull.walk_sftp): a folder the box will not list is
reported and skipped, never the end of the whole pull; names come as bytes."""

import stat

import asyncssh

from tui.remote.transfer.pull import CANNOT_LIST, NOT_REGULAR, walk_sftp


class Attrs:
    def __init__(self, mode, size=0, mtime=0):
        self.permissions, self.size, self.mtime = mode, size, mtime


class Name:
    def __init__(self, filename, attrs):
        self.filename, self.attrs = filename, attrs


class FakeSftp:
    """A box: /run holds ok.txt, a locked folder and a FIFO; the locked folder will not list."""

    def __init__(self):
        self.asked = []

    async def lstat(self, path):
        self.asked.append(path)
        return Attrs(stat.S_IFDIR | 0o755)

    async def readdir(self, path):
        self.asked.append(path)
        if path == b"/run":
            return [Name(b".", Attrs(stat.S_IFDIR)), Name(b"ok.txt", Attrs(stat.S_IFREG | 0o644, 5, 1.0)),
                    Name(b"locked", Attrs(stat.S_IFDIR | 0o000)), Name(b"pipe", Attrs(stat.S_IFIFO | 0o644)),
                    Name(b"ckpt-\xff.pt", Attrs(stat.S_IFREG | 0o644, 7, 2.0))]
        raise asyncssh.SFTPPermissionDenied("Permission denied")


async def test_a_folder_the_box_will_not_list_is_reported_and_the_rest_comes():
    sftp = FakeSftp()
    files, skipped = await walk_sftp(sftp, "/run")
    assert files == [("run/ckpt-\udcff.pt", 7, 2.0), ("run/ok.txt", 5, 1.0)]
    assert ("run/pipe", NOT_REGULAR) in skipped
    assert ("run/locked", CANNOT_LIST % "Permission denied") in skipped
    assert all(isinstance(p, bytes) for p in sftp.asked)  # asked as bytes: names that are not UTF-8 come back


def test_a_box_symlink_is_made_here_as_a_link_and_never_followed(tmp_path):
    import os

    from tui.core.transfer.download import place_link
    base = str(tmp_path / "pulled")
    os.makedirs(base)
    assert place_link(base, "run/latest.pt", "ckpt/e3.pt") == ("link", "")
    assert os.readlink(os.path.join(base, "run", "latest.pt")) == "ckpt/e3.pt"
    assert place_link(base, "run/latest.pt", "ckpt/e3.pt") == ("up to date", "")
    assert place_link(base, "run/latest.pt", "ckpt/e4.pt")[0] == "link"  # the box's link moved on
    assert os.readlink(os.path.join(base, "run", "latest.pt")) == "ckpt/e4.pt"
    with open(os.path.join(base, "run", "mine.txt"), "w") as f:
        f.write("my notes")
    status, why = place_link(base, "run/mine.txt", "/etc/passwd")
    assert status == "kept local" and open(os.path.join(base, "run", "mine.txt")).read() == "my notes"
    os.symlink("/etc", os.path.join(base, "run", "out"))  # a link to a folder outside, from an earlier pull
    assert place_link(base, "run/out/shadow", "x")[0] == "refused"  # never made through it
    assert not os.path.lexists("/etc/shadow-gputui-test")
    assert place_link(base, "../up", "x")[0] == "refused"
