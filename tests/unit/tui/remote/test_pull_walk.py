"""pull's walk of the box (tui.remote.pull.walk_sftp): a folder the box will not list is
reported and skipped, never the end of the whole pull; names come as bytes."""

import stat

import asyncssh

from tui.remote.pull import CANNOT_LIST, NOT_REGULAR, walk_sftp


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
