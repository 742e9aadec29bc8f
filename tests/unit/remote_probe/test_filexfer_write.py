"""The box side of push through the probe channel (remote_probe/files/filexfer_write.py), on a
real filesystem: nothing lands outside the root, no symlink below it is followed, chunks
land only in part files, in order, checked by sha256; commit renames only a complete part."""

import base64
import hashlib
import os

import pytest

from remote_probe import wire
from remote_probe.files import filexfer


def ask(kind, root, **params):
    return filexfer.handle(dict(params, type=kind, id=7, root=str(root)))


def write(root, path, data, offset=0, truncate=False, sha=None):
    return ask(wire.FILE_WRITE, root, path=path, offset=offset, truncate=truncate,
               data=base64.b64encode(data).decode(), sha256=sha or hashlib.sha256(data).hexdigest())


def test_a_file_goes_in_as_a_part_then_is_renamed_with_its_mode_and_time(tmp_path):
    root = tmp_path / "dest"
    assert ask(wire.FILE_MKDIR, root, path="")["type"] == "reply"
    assert ask(wire.FILE_MKDIR, root, path="d")["type"] == "reply"
    assert write(root, "d/a.bin.gputui-part", b"hello ", truncate=True)["size"] == 6
    assert write(root, "d/a.bin.gputui-part", b"world", offset=6)["size"] == 11
    facts = ask(wire.FILE_STAT, root, paths=["d/a.bin"])
    assert facts["entries"]["d/a.bin"] == {"kind": "none", "part": 11}
    assert facts["root"] == str(root) and facts["free"] > 0
    r = ask(wire.FILE_COMMIT, root, path="d/a.bin.gputui-part", to="d/a.bin", size=11, mode=0o750,
            mtime=1000000.0)
    assert r["type"] == "reply", r
    final = root / "d" / "a.bin"
    assert final.read_bytes() == b"hello world" and not (root / "d" / "a.bin.gputui-part").exists()
    assert final.stat().st_mode & 0o777 == 0o750 and final.stat().st_mtime == 1000000.0
    e = ask(wire.FILE_STAT, root, paths=["d/a.bin"])["entries"]["d/a.bin"]
    assert (e["kind"], e["size"], e["part"]) == ("file", 11, None)


@pytest.mark.parametrize("path", ["../x.gputui-part", "a/../../x.gputui-part", "/etc/x.gputui-part",
                                  "a//b.gputui-part", "./x.gputui-part", "x\x00.gputui-part",
                                  "plain.txt"])  # only part files are written, never a final name
def test_names_that_leave_the_root_or_are_not_parts_are_refused(tmp_path, path):
    r = write(tmp_path, path, b"x", truncate=True)
    assert r["type"] == "error", r
    assert sorted(os.listdir(tmp_path)) == []


def test_a_symlink_inside_the_root_is_never_followed(tmp_path):
    root, outside = tmp_path / "dest", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    os.symlink(outside, root / "sub")
    os.symlink(outside / "f", root / "f.gputui-part")
    for r in (write(root, "sub/f.gputui-part", b"x", truncate=True),
              write(root, "f.gputui-part", b"x", truncate=True),
              ask(wire.FILE_MKDIR, root, path="sub/deeper"),
              ask(wire.FILE_MKDIR, root, path="sub"),
              ask(wire.FILE_LINK, root, path="sub/l", target="/etc/passwd")):
        assert r["type"] == "error" and "symlink" in r["error"], r
    assert os.listdir(outside) == []
    assert ask(wire.FILE_STAT, root, paths=["sub/f"])["entries"]["sub/f"]["kind"] == "refused"


def test_a_damaged_chunk_or_a_gap_is_refused_and_the_part_stays_as_it_was(tmp_path):
    assert write(tmp_path, "a.gputui-part", b"abc", truncate=True)["size"] == 3
    bad = write(tmp_path, "a.gputui-part", b"def", offset=3, sha="0" * 64)
    assert bad["type"] == "error" and "damaged" in bad["error"]
    gap = write(tmp_path, "a.gputui-part", b"zzz", offset=10)
    assert gap["type"] == "error" and "past the part's end" in gap["error"]
    assert (tmp_path / "a.gputui-part").read_bytes() == b"abc"
    # a stale part longer than the file: the first chunk of a new send cuts it
    assert write(tmp_path, "a.gputui-part", b"X", truncate=True)["size"] == 1


def test_commit_checks_size_and_never_replaces_a_link_and_discard_removes_the_part(tmp_path):
    write(tmp_path, "a.gputui-part", b"abc", truncate=True)
    r = ask(wire.FILE_COMMIT, tmp_path, path="a.gputui-part", to="a", size=4)
    assert r["type"] == "error" and "3 bytes" in r["error"]
    r = ask(wire.FILE_COMMIT, tmp_path, path="a.gputui-part", to="b", size=3)
    assert r["type"] == "error"  # a part is renamed to its own name only
    os.symlink("/etc/passwd", tmp_path / "a")
    r = ask(wire.FILE_COMMIT, tmp_path, path="a.gputui-part", to="a", size=3)
    assert r["type"] == "error" and "not replacing" in r["error"]
    assert ask(wire.FILE_COMMIT, tmp_path, path="a.gputui-part", to="a", discard=True)["type"] == "reply"
    assert sorted(os.listdir(tmp_path)) == ["a"] and os.path.islink(tmp_path / "a")


def test_links_are_made_as_links_and_an_existing_name_is_left_alone(tmp_path):
    assert ask(wire.FILE_LINK, tmp_path, path="l", target="sub/t.py")["made"] is True
    assert os.readlink(tmp_path / "l") == "sub/t.py"
    assert ask(wire.FILE_LINK, tmp_path, path="l", target="other")["made"] is False
    assert os.readlink(tmp_path / "l") == "sub/t.py"


def test_list_names_files_relative_to_the_roots_parent_and_lists_the_rest(tmp_path):
    top = tmp_path / "run"
    (top / "ckpt").mkdir(parents=True)
    (top / "ckpt" / "e1.pt").write_bytes(b"12345")
    os.mkfifo(top / "pipe")
    os.symlink("ckpt", top / "latest")
    r = ask(wire.FILE_LIST, top)
    assert [(f[0], f[1]) for f in r["files"]] == [("run/ckpt/e1.pt", 5)]
    assert r["skipped"] == ["run/pipe"]
    assert r["links"] == [["run/latest", "ckpt"]]  # the laptop makes it as a link, as rsync -a does
    assert r["unlisted"] == []


def test_list_reports_a_folder_it_cannot_read(tmp_path, monkeypatch):
    """A folder the box user cannot list is said, with why (its files are missing from the
    pull), not silently left out. Root reads everything, so the refusal is os.scandir's."""
    top = tmp_path / "run"
    (top / "locked").mkdir(parents=True)
    (top / "ok.txt").write_text("x")
    real_scandir = os.scandir

    def scandir(path="."):
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)
    monkeypatch.setattr(os, "scandir", scandir)
    r = ask(wire.FILE_LIST, top)
    assert [f[0] for f in r["files"]] == ["run/ok.txt"]
    assert r["unlisted"] == [["run/locked", "Permission denied"]]


def test_the_bridge_routes_every_file_request_to_the_box_side():
    for kind in wire.FILE_WRITE_REQUESTS | {wire.FILE_READ}:
        line = wire.encode({"type": kind, "id": 1, "root": "/x"})
        assert filexfer.parse_request(line) is not None, kind
    assert wire.FILE_WRITE_REQUESTS <= wire.REQUEST_TYPES


def test_chmod_changes_a_file_and_never_what_a_link_points_to(tmp_path):
    top = tmp_path / "dest"
    top.mkdir()
    (top / "key.pem").write_text("k")
    os.chmod(top / "key.pem", 0o644)
    facts = ask(wire.FILE_STAT, top, paths=["key.pem"])["entries"]["key.pem"]
    assert facts["mode"] == 0o644  # the laptop compares it with the local file's
    assert ask(wire.FILE_CHMOD, top, path="key.pem", mode=0o600)["type"] == "reply"
    assert (top / "key.pem").stat().st_mode & 0o777 == 0o600
    outside = tmp_path / "outside.txt"
    outside.write_text("x")
    os.chmod(outside, 0o644)
    os.symlink(str(outside), top / "link")
    r = ask(wire.FILE_CHMOD, top, path="link", mode=0o600)
    assert r["type"] == "error" and "symlink" in r["error"], r
    assert outside.stat().st_mode & 0o777 == 0o644
