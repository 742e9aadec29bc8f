"""`gputui push` through a real sshd, connecting the way users do (alias in ~/.ssh/config):
a tree with a 200 MB file, the connection killed mid-file, resumed, verified on the box; a
second push sends nothing; nothing lands outside DEST."""

import hashlib
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.support.sshd import REPO


def gputui(*argv, **kw):
    return subprocess.Popen([sys.executable, "-m", "tui", *argv], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ), **kw)


def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def make_tree(root, mb=200):
    data = root / "data"
    (data / "sub").mkdir(parents=True)
    block = os.urandom(1 << 20)
    with open(data / "big.bin", "wb") as f:
        for i in range(mb):
            f.write(block[i:] + block[:i])  # `mb` MiB, no two alike
    (data / "sub" / "train.py").write_text("print('hi')\n")
    os.chmod(data / "sub" / "train.py", 0o755)
    (data / "private").mkdir()  # stays private on a shared box (it arrived 0755)
    os.chmod(data / "private", 0o700)
    os.symlink("sub/train.py", data / "link.py")
    os.mkfifo(data / "pipe")
    return data


def cut_mid_file(p, box, part, past, timeout):
    """Wait until the big file's part holds more than `past` bytes, then drop the link (every
    sshd session of the box killed) -> (out, err) of the push, which must have failed."""
    deadline = time.time() + timeout
    while time.time() < deadline and not (part.exists() and part.stat().st_size > past):
        time.sleep(0.05)
    assert part.exists(), p.communicate(timeout=60)
    for pid in box.session_pids():
        os.kill(pid, signal.SIGKILL)
    out, err = p.communicate(timeout=120)
    assert p.returncode != 0, (out, err)
    assert "run the same command again to continue" in err, err
    return out, err


def assert_tree_landed(dest, data, err):
    """make_tree's tree, complete on the box: content, mtime, mode, the link as a link, the
    FIFO listed as not sent."""
    big = dest / "data" / "big.bin"
    assert sha(big) == sha(data / "big.bin") and not (dest / "data" / "big.bin.gputui-part").exists()
    assert abs(big.stat().st_mtime - (data / "big.bin").stat().st_mtime) < 1
    assert (dest / "data" / "sub" / "train.py").stat().st_mode & 0o777 == 0o755
    assert (dest / "data" / "private").stat().st_mode & 0o777 == 0o700
    assert os.readlink(dest / "data" / "link.py") == "sub/train.py"
    assert "not sent: data/pipe (a FIFO)" in err  # listed, never silently dropped


def assert_second_push_sends_nothing(args, boxside):
    p = gputui(*args)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert out.startswith("0 B sent"), out
    assert "up to date" in out
    assert sorted(os.listdir(boxside)) == ["dest"]  # nothing outside DEST


def test_push_resumes_after_a_cut_and_a_second_push_sends_nothing(user_world, tmp_path):
    box = user_world.box
    data = make_tree(tmp_path)
    dest = tmp_path / "boxside" / "dest"
    args = ("push", str(data), "mybox:%s" % dest, "--remote-dir", box.remote_dir, "--simulate", "idle")
    p = gputui(*args)
    part = dest / "data" / "big.bin.gputui-part"
    cut_mid_file(p, box, part, 40 << 20, 120)  # the link drops mid-file
    cut_at = part.stat().st_size
    assert 0 < cut_at < 200 << 20
    # the big file went over several SFTP channels, each segment in its own part
    segs = [dest / "data" / ("big.bin.gputui-part.%d" % k) for k in (1, 2)]
    assert all(s.exists() for s in segs), os.listdir(dest / "data")
    kept = cut_at + sum(s.stat().st_size for s in segs)

    p = gputui(*args)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    assert "resumed" in out, out
    assert_tree_landed(dest, data, err)
    assert not [n for n in os.listdir(dest / "data") if ".gputui-part" in n]  # no segment left
    sent_mb = float(out.split(" MiB sent")[0].split()[-1]) if " MiB sent" in out else 0.0
    assert sent_mb < 200 - (kept >> 20) + 1  # every segment went on from its own part

    assert_second_push_sends_nothing(args, tmp_path / "boxside")


def test_pull_brings_a_tree_back_verified_and_a_second_pull_moves_nothing(user_world, tmp_path):
    box = user_world.box
    src = tmp_path / "boxside" / "run"
    (src / "ckpt").mkdir(parents=True)
    (src / "ckpt" / "epoch_3.pt").write_bytes(os.urandom(3 << 20))
    (src / "train.log").write_text("step 1/10\n" * 1000)
    (src / "train.sh").write_text("python train.py\n")
    os.chmod(src / "train.sh", 0o755)
    os.symlink("ckpt/epoch_3.pt", src / "latest.pt")  # a HuggingFace cache is links like this
    os.symlink("/etc/passwd", src / "outside")  # kept as a link, never followed
    os.mkfifo(src / "pipe")
    local = tmp_path / "laptop"
    args = ("pull", "mybox:%s" % src, str(local), "--remote-dir", box.remote_dir, "--simulate", "idle")
    p = gputui(*args)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert sha(local / "run" / "ckpt" / "epoch_3.pt") == sha(src / "ckpt" / "epoch_3.pt")
    assert (local / "run" / "train.log").read_text() == (src / "train.log").read_text()
    assert "not pulled: run/pipe" in err  # listed, not a hang on the FIFO
    assert os.stat(local / "run" / "train.sh").st_mode & 0o777 == 0o700  # still runnable, still private
    assert os.readlink(local / "run" / "latest.pt") == "ckpt/epoch_3.pt"
    assert sha(local / "run" / "latest.pt") == sha(src / "ckpt" / "epoch_3.pt")
    assert os.readlink(local / "run" / "outside") == "/etc/passwd"  # a link, as on the box
    assert os.stat(local / "run" / "train.log").st_mode & 0o777 == 0o600
    p = gputui(*args)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert "5 up to date" in out and "0 B received" in out, (out, err)  # a summary, not a line a file


def test_one_file_pushed_to_a_new_name_lands_as_that_file(user_world, tmp_path):
    """`push model.pt box:/runs/best.pt` made a folder best.pt holding model.pt (a walk-through);
    scp and rsync make the file best.pt. Pushed again it is up to date; into a folder, inside."""
    box = user_world.box
    model = tmp_path / "model.pt"
    model.write_bytes(os.urandom(4096))
    runs = tmp_path / "boxside" / "runs"
    runs.mkdir(parents=True)
    common = ("--remote-dir", box.remote_dir, "--simulate", "idle")
    for _ in range(2):
        p = gputui("push", str(model), "mybox:%s" % (runs / "best.pt"), *common)
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert (runs / "best.pt").is_file() and sha(runs / "best.pt") == sha(model)
    assert "up to date" in out, out
    p = gputui("push", str(model), "mybox:%s" % runs, *common)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert sha(runs / "model.pt") == sha(model)


def assert_a_chmod_is_carried(tmp_path, push_args, timeout):
    """A file pushed, chmod'ed here, pushed again: nothing is sent and the box's copy takes the
    new mode (push said 'up to date' and kept the old one). push_args(local, dest) -> argv."""
    f = tmp_path / "key.pem"
    f.write_text("secret\n")
    os.chmod(f, 0o644)
    dest = tmp_path / "boxside"
    args = push_args(f, dest)
    assert gputui(*args).wait(timeout=timeout) == 0
    os.chmod(f, 0o600)
    p = gputui(*args)
    out, err = p.communicate(timeout=timeout)
    assert p.returncode == 0, err
    assert "1 up to date" in out and out.startswith("0 B sent"), out
    assert (dest / "key.pem").stat().st_mode & 0o777 == 0o600


def test_a_chmod_made_here_reaches_the_box_without_sending_the_file(user_world, tmp_path):
    box = user_world.box
    assert_a_chmod_is_carried(tmp_path, lambda f, dest: (
        "push", str(f), "mybox:%s/" % dest, "--remote-dir", box.remote_dir, "--simulate", "idle"), 120)


def test_push_dot_fills_dest_with_the_folders_contents(user_world, tmp_path):
    box = user_world.box
    proj = tmp_path / "proj"
    (proj / "src").mkdir(parents=True)
    (proj / "train.py").write_text("print('go')\n")
    (proj / "src" / "model.py").write_text("class M: pass\n")
    work = tmp_path / "boxside" / "work"
    p = subprocess.Popen([sys.executable, "-m", "tui", "push", ".", "mybox:%s" % work, "--remote-dir",
                          box.remote_dir, "--simulate", "idle"], cwd=proj, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert (work / "train.py").read_text() == "print('go')\n"
    assert (work / "src" / "model.py").read_text() == "class M: pass\n"


def test_pull_goes_on_past_a_folder_the_box_will_not_list_and_names_a_missing_path(user_world, tmp_path):
    """One unreadable folder on the box stopped a whole pull ('pull stopped: Permission denied;
    run the same command again'), nothing downloaded; a missing path read the same."""
    box = user_world.box
    src = tmp_path / "boxside" / "mix"
    (src / "locked").mkdir(parents=True)
    (src / "locked" / "hidden.txt").write_text("x")
    (src / "ok.txt").write_text("fine\n")
    local = tmp_path / "laptop"
    as_box_user = os.geteuid() != 0  # root lists everything (tests/unit/tui/remote/test_pull_walk.py)
    os.chmod(src / "locked", 0o000)
    try:
        p = gputui("pull", "mybox:%s" % src, "mybox:%s" % (tmp_path / "boxside" / "gone"), str(local),
                   "--remote-dir", box.remote_dir, "--simulate", "idle")
        out, err = p.communicate(timeout=120)
    finally:
        os.chmod(src / "locked", 0o755)
    assert (local / "mix" / "ok.txt").read_text() == "fine\n", err
    assert "cannot pull %s" % (tmp_path / "boxside" / "gone") in err and "again" not in err, err
    assert p.returncode == 1, err
    if as_box_user:
        assert "not pulled: mix/locked (a folder the box will not list" in err, err


def test_pull_of_a_folder_with_a_name_that_is_not_utf8(user_world, tmp_path):
    """One such name stopped a whole SFTP pull ('Unable to decode name': nothing was pulled);
    now it comes with the rest, under a name the laptop's disk takes, mapped back to its bytes."""
    from tui.core.transfer.download import remote_for
    box = user_world.box
    src = tmp_path / "boxside" / "odd"
    src.mkdir(parents=True)
    raw = bytes(src) + b"/ckpt-\xff\xfe.pt"
    with open(raw, "wb") as f:
        f.write(b"weights")
    (src / "ok.txt").write_text("fine\n")
    local = tmp_path / "laptop"
    p = gputui("pull", "mybox:%s" % src, str(local), "--remote-dir", box.remote_dir, "--simulate", "idle")
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert (local / "odd" / "ok.txt").read_text() == "fine\n"
    landed = [n for n in os.listdir(local / "odd") if n.startswith("ckpt-")]
    assert len(landed) == 1 and (local / "odd" / landed[0]).read_bytes() == b"weights"
    assert remote_for(str(local), str(local / "odd" / landed[0])).encode("utf-8", "surrogateescape") \
        == b"odd/ckpt-\xff\xfe.pt"


@pytest.mark.parametrize("size,part", [
    (300 << 10, "weights.bin.gputui-part"),
    (60 << 20, "weights.bin.gputui-part.2"),  # a big file's segment part (tui/remote/transfer/push_spread.py)
])
def test_a_symlink_where_the_part_would_be_is_refused_and_its_target_untouched(user_world, tmp_path, size, part):
    box = user_world.box
    data = tmp_path / "data"
    data.mkdir()
    with open(data / "weights.bin", "wb") as f:
        f.truncate(size)
    outside = tmp_path / "boxside" / "precious"
    outside.parent.mkdir()
    outside.write_bytes(b"keep me")
    dest = tmp_path / "boxside" / "dest"
    (dest / "data").mkdir(parents=True)
    os.symlink(str(outside), dest / "data" / part)  # a resume would write through it
    p = gputui("push", str(data), "mybox:%s" % dest, "--remote-dir", box.remote_dir, "--simulate", "idle")
    out, err = p.communicate(timeout=120)
    assert p.returncode != 0, out
    assert "not a regular file" in err and part in err, err
    assert outside.read_bytes() == b"keep me"
    assert not (dest / "data" / "weights.bin").exists()
