"""`gputui push` and `gputui pull` through a PTY-only box (RunPod's basic SSH: no exec, no
SFTP): the files move as file_write/file_read chunks inside the probe's terminal stream. A
tree with a large file, the connection killed mid-file, resumed, verified on the box; a
second push sends nothing; the tree comes back with pull."""

import os
import time

import pytest

from tests.e2e.test_push import gputui, make_tree, sha
from tests.support.pty_fixtures import pty_only_box  # noqa: F401

pytestmark = pytest.mark.timeout(600)
BIG_MB = 64  # through a terminal, base64, on a loaded 2-core machine: big enough to cut mid-file
CHUNK = 256 << 10  # tui.remote.push_probe.CHUNK


def box_args(box, *argv):
    return argv + ("--ssh-config", box.ssh_config, "--remote-dir", box.remote_dir, "--simulate", "idle")


def test_push_through_the_terminal_resumes_after_a_cut_and_pull_brings_it_back(pty_only_box, tmp_path):
    box = pty_only_box
    data = make_tree(tmp_path, mb=BIG_MB)
    dest = tmp_path / "boxside" / "dest"
    args = box_args(box, "push", str(data), "testbox:%s" % dest)
    p = gputui(*args)
    part = dest / "data" / "big.bin.gputui-part"
    deadline = time.time() + 240
    while time.time() < deadline and not (part.exists() and part.stat().st_size > 8 << 20):
        time.sleep(0.05)
    assert part.exists(), p.communicate(timeout=60)
    for pid in box.session_pids():  # the link drops mid-file
        os.kill(pid, 9)
    out, err = p.communicate(timeout=120)
    assert p.returncode != 0, (out, err)
    assert "through probe channel" in err, err  # the transport in use is said
    assert "run the same command again to continue" in err, err
    cut_at = part.stat().st_size
    assert 0 < cut_at < BIG_MB << 20

    p = gputui(*args)
    out, err = p.communicate(timeout=400)
    assert p.returncode == 0, err
    assert "resumed" in out, out
    big = dest / "data" / "big.bin"
    assert sha(big) == sha(data / "big.bin") and not part.exists()
    assert abs(big.stat().st_mtime - (data / "big.bin").stat().st_mtime) < 1
    assert (dest / "data" / "sub" / "train.py").stat().st_mode & 0o777 == 0o755
    assert os.readlink(dest / "data" / "link.py") == "sub/train.py"
    assert "not sent: data/pipe (a FIFO)" in err  # listed, never silently dropped
    sent = float(out.split(" MiB sent")[0].split()[-1]) * (1 << 20) if " MiB sent" in out else 0.0
    # the resume continued from the part: at most one chunk more than what was missing
    assert sent <= (BIG_MB << 20) - cut_at + CHUNK + (1 << 20), (sent, cut_at)

    p = gputui(*args)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert out.startswith("0 B sent"), out
    assert "up to date" in out
    assert sorted(os.listdir(tmp_path / "boxside")) == ["dest"]  # nothing outside DEST

    laptop = tmp_path / "laptop"
    p = gputui(*box_args(box, "pull", "testbox:%s" % (dest / "data"), str(laptop)))
    out, err = p.communicate(timeout=400)
    assert p.returncode == 0, err
    assert sha(laptop / "data" / "big.bin") == sha(data / "big.bin")
    assert (laptop / "data" / "sub" / "train.py").read_text() == "print('hi')\n"
    assert "not pulled: data/link.py" in err  # a link is listed, not followed


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
