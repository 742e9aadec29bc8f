"""`gputui push` and `gputui pull` through a PTY-only box (RunPod's basic SSH: no exec, no
SFTP): the files move as file_write/file_read chunks inside the probe's terminal stream. A
tree with a large file, the connection killed mid-file, resumed, verified on the box; a
second push sends nothing; the tree comes back with pull."""

import os

import pytest

from tests.e2e.test_push import (assert_a_chmod_is_carried, assert_second_push_sends_nothing,
                                 assert_tree_landed, cut_mid_file, gputui, make_tree, sha)
from tests.support.pty_fixtures import pty_only_box  # noqa: F401

pytestmark = pytest.mark.timeout(600)
BIG_MB = 64  # through a terminal, base64, on a loaded 2-core machine: big enough to cut mid-file
CHUNK = 256 << 10  # tui.remote.transfer.push_probe.CHUNK


def box_args(box, *argv):
    return argv + ("--ssh-config", box.ssh_config, "--remote-dir", box.remote_dir, "--simulate", "idle")


def test_push_through_the_terminal_resumes_after_a_cut_and_pull_brings_it_back(pty_only_box, tmp_path):
    box = pty_only_box
    data = make_tree(tmp_path, mb=BIG_MB)
    dest = tmp_path / "boxside" / "dest"
    args = box_args(box, "push", str(data), "testbox:%s" % dest)
    p = gputui(*args)
    part = dest / "data" / "big.bin.gputui-part"
    out, err = cut_mid_file(p, box, part, 8 << 20, 240)  # the link drops mid-file
    assert "through probe channel" in err, err  # the transport in use is said
    cut_at = part.stat().st_size
    assert 0 < cut_at < BIG_MB << 20

    p = gputui(*args)
    out, err = p.communicate(timeout=400)
    assert p.returncode == 0, err
    assert "resumed" in out, out
    assert_tree_landed(dest, data, err)
    sent = float(out.split(" MiB sent")[0].split()[-1]) * (1 << 20) if " MiB sent" in out else 0.0
    # the resume continued from the part: at most one chunk more than what was missing
    assert sent <= (BIG_MB << 20) - cut_at + CHUNK + (1 << 20), (sent, cut_at)

    assert_second_push_sends_nothing(args, tmp_path / "boxside")

    laptop = tmp_path / "laptop"
    p = gputui(*box_args(box, "pull", "testbox:%s" % (dest / "data"), str(laptop)))
    out, err = p.communicate(timeout=400)
    assert p.returncode == 0, err
    assert sha(laptop / "data" / "big.bin") == sha(data / "big.bin")
    assert (laptop / "data" / "sub" / "train.py").read_text() == "print('hi')\n"
    assert os.readlink(laptop / "data" / "link.py") == "sub/train.py"  # made as a link, as on the box


def test_push_through_the_terminal_refuses_a_symlink_inside_dest(pty_only_box, tmp_path):
    box = pty_only_box
    src = tmp_path / "src" / "data"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "x.txt").write_text("payload\n")
    dest = tmp_path / "boxside" / "dest"
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (dest / "data").mkdir(parents=True)
    os.symlink(outside, dest / "data" / "sub")  # planted on the box: points out of DEST
    p = gputui(*box_args(box, "push", str(src), "testbox:%s" % dest))
    out, err = p.communicate(timeout=200)
    assert p.returncode == 2, (out, err)
    assert "symlink" in err, err
    assert os.listdir(outside) == []  # nothing written through it


def test_one_file_to_a_new_name_through_the_terminal(pty_only_box, tmp_path):
    """The probe channel tells a missing DEST from a folder as SFTP does: one file pushed to
    box:/runs/best.pt is the file best.pt, and a DEST that is a folder takes it inside."""
    box = pty_only_box
    model = tmp_path / "model.pt"
    model.write_bytes(os.urandom(8192))
    runs = tmp_path / "boxside" / "runs"
    runs.mkdir(parents=True)
    for dest, landed in ((runs / "best.pt", runs / "best.pt"), (runs, runs / "model.pt")):
        p = gputui(*box_args(box, "push", str(model), "testbox:%s" % dest))
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        assert landed.is_file() and sha(landed) == sha(model), (out, err)


def test_a_chmod_made_here_reaches_the_box_through_the_terminal(pty_only_box, tmp_path):
    box = pty_only_box
    assert_a_chmod_is_carried(tmp_path, lambda f, dest: box_args(box, "push", str(f), "testbox:%s/" % dest), 300)
