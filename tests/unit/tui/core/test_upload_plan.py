"""What push decides before a byte moves (tui.core.transfer.upload_plan, tui.cli.push_cmd.split_remote)."""

import os

import pytest

from tui.cli.transfer_args import split_remote
from tui.core.transfer.upload_plan import (LocalEntry, RemoteStat, decide, estimate, name_problem,
                                           on_wiped_disk, remote_path_for, scan_local)

F = LocalEntry("d/a.bin", "/x/d/a.bin", "file", size=100, mtime=1000.0)


@pytest.mark.parametrize("remote, part, want", [
    (None, None, ("send", 0)),
    (RemoteStat(100, 1000.4), None, ("skip", 0)),  # rsync's quick check: size and mtime
    (RemoteStat(100, 990.0), None, ("send", 0)),  # same size, other time: sent again
    (RemoteStat(99, 1000.0), None, ("send", 0)),
    (RemoteStat(100, 1000.0, is_file=False), None, ("send", 0)),
    (None, 40, ("resume", 40)),
    (None, 100, ("resume", 100)),  # all bytes there, not yet verified and renamed
    (None, 101, ("send", 0)),  # a part longer than the file is not a prefix of it
    (None, 0, ("send", 0)),
])
def test_decide(remote, part, want):
    assert decide(F, remote, part) == want


@pytest.mark.parametrize("rel", ["../x", "a/../../x", "/etc/passwd", "a//b", "", "a/./b", "a\x00b"])
def test_names_that_leave_dest_are_refused(rel):
    with pytest.raises(ValueError):
        remote_path_for("/data", rel)


def test_names_inside_dest():
    assert remote_path_for("/data", "run/ckpt.pt") == "/data/run/ckpt.pt"


@pytest.mark.parametrize("spec, want", [
    ("mybox:/root/autodl-tmp", ("mybox", "/root/autodl-tmp")),
    ("mybox:~/data", ("mybox", "~/data")),
    ("root@connect.example.com:38211:/root/x", ("root@connect.example.com:38211", "/root/x")),
    ("mybox:data", ("mybox", "data")),
    ("mybox:", ("mybox", ".")),
])
def test_split_remote(spec, want):
    assert split_remote(spec) == want


def test_split_remote_needs_a_host():
    with pytest.raises(ValueError):
        split_remote("just-a-path")


def test_estimate_and_wiped_disk():
    assert estimate(100 << 20, 10 << 20, 3.6) == (10.0, 0.01)
    assert estimate(1, None, 3.6) == (None, None)
    assert on_wiped_disk("/root/code/x", ["/root"]) == "/root"
    assert on_wiped_disk("/root/autodl-fs/x", ["/root/autodl-tmp"]) is None
    assert on_wiped_disk("/workspace", ["/"]) == "/"


def test_scan_lists_what_it_cannot_send(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    (d / "f").write_bytes(b"x" * 5)
    os.mkfifo(d / "p")
    os.symlink("/etc", d / "out")  # kept as a link, never walked into
    got = {e.rel: (e.kind, e.why) for e in scan_local([str(d)])}
    assert got == {"d": ("dir", ""), "d/f": ("file", ""), "d/p": ("unusual", "a FIFO"),
                   "d/out": ("symlink", "")}
    assert name_problem("a/" + "x" * 256) and name_problem("ok/name") is None


def test_a_file_name_whose_part_name_would_not_fit_is_listed_not_sent(tmp_path):
    # NAME.gputui-part must fit NAME_MAX (255) too: a 255-byte file name stopped the whole push
    d = tmp_path / "d"
    d.mkdir()
    (d / ("L" * 255)).write_bytes(b"x")
    # 241 + len(".gputui-part.2") == 255: a big file's last segment part fits too
    (d / ("F" * 241)).write_bytes(b"x")
    (d / ("G" * 242)).write_bytes(b"x")
    (d / ("D" * 255)).mkdir()  # a folder has no part name
    got = {e.rel: (e.kind, e.why) for e in scan_local([str(d)])}
    assert got["d/" + "L" * 255] == ("unusual", "a name longer than 241 bytes")
    assert got["d/" + "G" * 242] == ("unusual", "a name longer than 241 bytes")
    assert got["d/" + "F" * 241] == ("file", "")
    assert got["d/" + "D" * 255] == ("dir", "")
    assert name_problem("a" * 250) is None and name_problem("a" * 250, is_file=True)


@pytest.mark.parametrize("name, refused", [
    ("x.gputui-part", True), ("x.bin.gputui-part.1", True), ("x.gputui-part.12", True),
    ("x.gputui-part.txt", False), ("gputui-part", False), ("x.gputui-part.", False)])
def test_names_gputui_uses_for_partial_uploads_are_not_sent(name, refused):
    # sent, "X.gputui-part.1" beside a big file X would be overwritten by X's segment part
    assert (name_problem("d/" + name, is_file=True) == "a name gputui uses for its partial uploads") is refused


class _Preset:
    def __init__(self, key, name, wipes=()):
        self.key, self.name, self.ephemeral_paths = key, name, list(wipes)


GIB = 1 << 30
TREE = [LocalEntry("d", "/x/d", "dir"), LocalEntry("d/a.bin", "/x/d/a.bin", "file", size=2 * GIB),
        LocalEntry("d/p", "/x/d/p", "unusual", why="a FIFO")]


@pytest.mark.parametrize("dest, free, preset, rate, bps, want, unwanted", [
    # the disk will not hold it: said before a byte moves
    ("/root/x", GIB, _Preset("runpod", "RunPod"), None, None, [("stop", "1.0 GiB free there")], ["tip"]),
    # a disk the release wipes, and the GPU's price while the data moves
    ("/workspace/x", None, _Preset("runpod", "RunPod", ["/workspace"]), 2.0, None,
     [("warn", "RunPod wipes at release (/workspace)"), ("info", "bill ¥2.00/h")], ["stop", "tip"]),
    # a lab box, provider unknown: a guess, said as one, with how to know
    ("/data/x", None, _Preset("unknown", "unknown provider", ["/"]), None, None,
     [("warn", "provider is not known: this destination may be on a disk that is wiped at release (/)")],
     ["unknown provider wipes"]),
    # at a measured 10 MB/s: 2 GiB take 3:34, at ¥3.6/h that is ¥0.21 of GPU time
    ("/root/autodl-tmp/x", 10 * GIB, _Preset("autodl", "AutoDL"), 3.6, 10e6, [
        ("estimate", "about 3:34 at the measured 10.0 MB/s; the GPUs bill ¥0.21 meanwhile"),
        ("info", "无卡模式 (no-GPU mode)")], ["stop", "warn"]),
])
def test_plan_lines(dest, free, preset, rate, bps, want, unwanted):
    from tui.core.transfer.upload_plan import plan_for, plan_lines
    plan = plan_for(TREE, dest, free, preset, rate)
    assert (plan.files, plan.total, plan.unusual) == (1, 2 * GIB, (("d/p", "a FIFO"),))
    lines = plan_lines(plan, bps)
    assert lines[0] == ("info", "1 file, 2.0 GiB")
    for level, text in want:
        assert any(lv == level and text in t for lv, t in lines), (level, text, lines)
    for text in unwanted:
        assert not any(text in lv or text in t for lv, t in lines), (text, lines)


def test_plan_lines_in_chinese_keep_their_figures():
    from tui.core import i18n
    from tui.core.transfer.upload_plan import plan_for, plan_lines
    i18n.set_language("zh")
    try:
        lines = plan_lines(plan_for(TREE, "/root/autodl-tmp/x", None, _Preset("autodl", "AutoDL"), 3.6), 10e6)
    finally:
        i18n.set_language("en")
    text = " ".join(t for _lv, t in lines)
    assert "按实测的 10.0 MB/s 约需 3:34" in text and "无卡模式" in text and "¥0.21" in text


def test_two_sources_with_one_name_send_the_first_and_list_the_second(tmp_path):
    # `push a/f.txt b/f.txt box:/x` raced for one part on the box and stopped the push
    for sub, body in (("a", b"AAAA"), ("b", b"BB")):
        (tmp_path / sub / "data").mkdir(parents=True)
        (tmp_path / sub / "f.txt").write_bytes(body)
        (tmp_path / sub / "data" / (sub + ".txt")).write_bytes(body)
    (tmp_path / "b" / "data" / "a.txt").write_bytes(b"clash")
    got = [(e.rel, e.kind, e.why, e.path) for e in scan_local(
        [str(tmp_path / "a" / "f.txt"), str(tmp_path / "b" / "f.txt"),
         str(tmp_path / "a" / "data"), str(tmp_path / "b" / "data")])]
    assert got == [
        ("f.txt", "file", "", str(tmp_path / "a" / "f.txt")),
        ("f.txt", "unusual", "the same name as another source", str(tmp_path / "b" / "f.txt")),
        ("data", "dir", "", str(tmp_path / "a" / "data")),
        ("data/a.txt", "file", "", str(tmp_path / "a" / "data" / "a.txt")),
        ("data/a.txt", "unusual", "the same name as another source", str(tmp_path / "b" / "data" / "a.txt")),
        ("data/b.txt", "file", "", str(tmp_path / "b" / "data" / "b.txt")),
    ]


UNREADABLE_SCAN = r"""
import json, sys
from tui.core.transfer.upload_plan import scan_local
print(json.dumps({e.rel: [e.kind, e.why, e.lost] for e in scan_local([sys.argv[1]])}))
"""


def test_what_cannot_be_read_is_listed_and_counts_as_not_sent(tmp_path):
    """A walk-through's unreadable file stopped every push of its tree ('push stopped:
    Permission denied', parts left on the box) and a folder without read permission arrived
    empty without a word. Both are listed before anything is sent, and push fails on them
    (`lost`); a FIFO is listed but is no data of the user's. Run as a user the permissions
    bind (root reads everything)."""
    import json
    import subprocess
    import sys
    import tempfile
    from tests.support import REPO
    top = tempfile.mkdtemp(prefix="gputui-unreadable-")
    try:
        os.chmod(top, 0o755)
        d = os.path.join(top, "d")
        os.makedirs(os.path.join(d, "locked"))
        for name, mode in (("ok.txt", 0o644), ("secret.txt", 0o000)):
            with open(os.path.join(d, name), "w") as f:
                f.write(name)
            os.chmod(os.path.join(d, name), mode)
        with open(os.path.join(d, "locked", "inside.txt"), "w") as f:
            f.write("x")
        os.chmod(os.path.join(d, "locked"), 0o000)
        os.mkfifo(os.path.join(d, "pipe"))
        os.chmod(d, 0o755)
        argv = [sys.executable, "-c", UNREADABLE_SCAN, d]
        if os.geteuid() == 0:  # root without the capabilities that read past permissions
            import shutil as sh
            if not sh.which("setpriv"):
                pytest.skip("running as root without util-linux's setpriv")
            drop = "-dac_override,-dac_read_search"
            argv = ["setpriv", "--inh-caps=" + drop, "--bounding-set=" + drop] + argv
        out = subprocess.run(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=dict(os.environ, PYTHONPATH=REPO), timeout=60)
        assert out.returncode == 0, out.stderr
        got = json.loads(out.stdout)
        assert got["d/ok.txt"] == ["file", "", False]
        assert got["d/secret.txt"][0] == "unusual" and "cannot be read" in got["d/secret.txt"][1]
        assert got["d/secret.txt"][2] is True
        assert got["d/locked"][0] == "unusual" and "folder that cannot be read" in got["d/locked"][1]
        assert got["d/locked"][2] is True
        assert got["d/pipe"] == ["unusual", "a FIFO", False]
    finally:
        for root, dirs, _files in os.walk(top):
            for name in dirs:
                os.chmod(os.path.join(root, name), 0o755)
        import shutil
        shutil.rmtree(top, ignore_errors=True)


@pytest.mark.parametrize("kind, folder_meant, more, want", [
    ("none", False, False, ("best.pt", "/x")),      # scp model.pt box:/x/best.pt
    ("file", False, False, ("best.pt", "/x")),      # ... over the box's older best.pt
    ("dir", False, False, ("model.pt", "/x/best.pt")),  # a folder: into it
    ("link", False, False, ("model.pt", "/x/best.pt")),  # a link (to a folder, maybe): as before
    ("none", True, False, ("model.pt", "/x/best.pt")),  # best.pt/ : the folder to make
    ("none", False, True, (None, "/x/best.pt")),     # two sources: DEST is their folder
])
def test_one_file_to_a_dest_that_is_not_a_folder_lands_as_dest(kind, folder_meant, more, want):
    from tui.core.transfer.upload_plan import as_file_target
    entries = [LocalEntry("model.pt", "/l/model.pt", "file", 5)]
    if more:
        entries.append(LocalEntry("b.txt", "/l/b.txt", "file", 1))
    got, dest = as_file_target(entries, "/x/best.pt", kind, folder_meant)
    assert dest == want[1]
    if want[0]:
        assert [e.rel for e in got] == [want[0]] and got[0].path == "/l/model.pt"
    else:
        assert got == entries


def test_dot_pushes_the_folders_contents(tmp_path, monkeypatch):
    """`push . box:/x` was refused ("refusing name '.'"); rsync and scp fill /x with the
    contents, and so does push now (also `..` and `sub/..`)."""
    (tmp_path / "proj" / "src").mkdir(parents=True)
    (tmp_path / "proj" / "train.py").write_text("x")
    (tmp_path / "proj" / "src" / "m.py").write_text("y")
    monkeypatch.chdir(tmp_path / "proj")
    for top in (".", "./", "src/.."):
        got = {e.rel: e.kind for e in scan_local([top])}
        assert got == {"src": "dir", "src/m.py": "file", "train.py": "file"}, (top, got)
    monkeypatch.chdir(tmp_path / "proj" / "src")
    assert {e.rel for e in scan_local([".."])} == {"src", "src/m.py", "train.py"}
    assert {e.rel for e in scan_local(["../src"])} == {"src", "src/m.py"}  # a named folder keeps its name
