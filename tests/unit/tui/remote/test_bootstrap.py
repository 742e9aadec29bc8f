"""The bootstrap stub, run by a real /bin/sh with controlled PATHs."""

import json
import subprocess

import pytest

from remote_probe import wire
from tui.remote import bootstrap
from tui.remote.probe.bundle import build_probe, probe_filename


def run(cmd, home, path):
    env = {"HOME": str(home), "PATH": str(path)}
    return subprocess.run(["/bin/sh", "-c", cmd], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=60)


def fake_python(dirpath, version):
    dirpath.mkdir(exist_ok=True)
    py = dirpath / "python3"
    py.write_text("#!/bin/sh\n"
                  "case \"$1\" in -V) echo 'Python %s';; *) exit 1;; esac\n" % version)
    py.chmod(0o755)
    return py


def test_no_python_has_its_own_exit_code(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    r = run(bootstrap.probe_command("abc", candidates=("python3", "python")), tmp_path, empty)
    assert r.returncode == wire.EXIT_NO_PYTHON
    assert "No python3 on the box" in bootstrap.explain_exit(r.returncode, r.stderr)


def test_old_python_is_named_in_the_message(tmp_path):
    fake_python(tmp_path / "bin", "3.6.9")
    r = run(bootstrap.probe_command("abc", candidates=("python3",)), tmp_path, tmp_path / "bin")
    assert r.returncode == wire.EXIT_PYTHON_TOO_OLD
    msg = bootstrap.explain_exit(r.returncode, r.stderr)
    assert "3.6.9" in msg and "3.8+" in msg


def test_missing_probe_asks_for_deploy(tmp_path):
    r = run(bootstrap.probe_command("abc"), tmp_path, "/usr/bin:/bin")
    assert r.returncode == wire.EXIT_PROBE_MISSING


@pytest.mark.parametrize("remote_dir", [None, "odd dir/it's \"quoted\" $HOME `x`"])
def test_deployed_probe_runs_from_any_remote_dir(tmp_path, remote_dir):
    data, sha = build_probe()
    base = tmp_path / (remote_dir or bootstrap.DEFAULT_REMOTE_DIR)
    base.mkdir(parents=True)
    (base / probe_filename(sha)).write_bytes(data)
    cmd = bootstrap.probe_command(sha, mode="once", simulate="cpu-only", remote_dir=remote_dir)
    r = run(cmd, tmp_path, "/usr/bin:/bin")
    assert r.returncode == 0, r.stderr
    word, _, end = bootstrap.find_marker(r.stdout.encode(), "0")
    assert word == "START"
    word, detail, end = bootstrap.find_marker(r.stdout.encode(), "0", end)
    assert word == "RUN" and detail == str(base)  # the script says where the probe lives
    doc = json.loads(r.stdout.encode()[end:])
    assert doc["inventory"]["reason"].startswith("no NVIDIA GPU found")
    assert not (tmp_path / "x").exists()  # the backticks were data, not a command


def test_probe_crash_and_unknown_codes_are_explained():
    assert "crashed" in bootstrap.explain_exit(wire.EXIT_PROBE_CRASHED, "Traceback\nKeyError: 1")
    assert "KeyError: 1" in bootstrap.explain_exit(wire.EXIT_PROBE_CRASHED, "Traceback\nKeyError: 1")
    assert "status 3" in bootstrap.explain_exit(3, "")


def test_bundle_is_deterministic_and_carries_pynvml():
    import io
    import zipfile
    data, sha = build_probe()
    build_probe.cache_clear()
    data2, sha2 = build_probe()
    assert sha == sha2 and data == data2
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    assert "__main__.py" in names and "pynvml.py" in names
    assert "remote_probe/scenarios/a100x2.json" in names
    assert not any("__pycache__" in n for n in names)


# -- python discovery (issue 23): conda and venv layouts, versioned names, honest messages ----
def real_python(path):
    """A python the probe accepts at `path` (a link to this interpreter)."""
    import os
    import sys
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(sys.executable, str(path))
    return path


HIDE_SYSTEM_PYTHONS = r"""
for f in /usr/bin/python* /usr/local/bin/python*; do
  [ -e "$f" ] && mount --bind /dev/null "$f"
done
mount --bind "$0" /opt && exec "$@"
"""


def discovered(tmp_path, home, opt=None, choose_only=True):
    """Run the start script with an empty PATH, on a box that has only the pythons this test
    made: in a private mount namespace the system's pythons are hidden and `opt` is /opt.
    -> (result, the python it chose: the script prints it instead of running the probe)."""
    import os
    if os.geteuid() != 0 or subprocess.run(["unshare", "-m", "true"]).returncode != 0:
        pytest.skip("a box without the system's pythons needs root and mount namespaces")
    empty = tmp_path / "empty-bin"
    empty.mkdir(exist_ok=True)
    opt = opt or tmp_path / "opt"
    opt.mkdir(exist_ok=True)
    script = bootstrap.probe_script("abc", mode="once")
    if choose_only:
        script = (script.replace('exec "$P"', 'echo "CHOSEN=$P"; exit 0; exec "$P"')
                  .replace('[ ! -f "$F" ]', 'false'))
    env = {"HOME": str(home)}
    r = subprocess.run(["/usr/bin/env", "-i"] + ["%s=%s" % kv for kv in env.items()]
                       + ["/usr/bin/unshare", "-m", "/bin/sh", "-c",
                          "PATH=/usr/bin:/bin; " + HIDE_SYSTEM_PYTHONS, str(opt),
                          "/usr/bin/env", "PATH=" + str(empty), "/bin/sh", "-c", script],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    chosen = [ln[7:] for ln in r.stdout.splitlines() if ln.startswith("CHOSEN=")]
    return r, (chosen[0] if chosen else None)


@pytest.mark.parametrize("layout", ["miniconda3/bin/python", "anaconda3/bin/python",
                                    "miniforge3/bin/python", ".venv/bin/python", "venv/bin/python"])
def test_python_in_a_home_conda_or_venv_is_found(tmp_path, layout):
    home = tmp_path / "home"
    want = real_python(home / layout)
    r, chosen = discovered(tmp_path, home)
    assert chosen == str(want), r.stderr


def test_versioned_python_on_path_is_found(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    want = real_python(tmp_path / "empty-bin" / "python3.11")
    r, chosen = discovered(tmp_path, home)
    assert chosen == "python3.11", r.stderr
    assert want.exists()


@pytest.fixture
def opt_tree(tmp_path):
    return tmp_path / "opt"


@pytest.mark.parametrize("layout", ["conda/bin/python", "venv/bin/python", "conda/envs/train/bin/python"])
def test_python_only_under_opt_is_found(tmp_path, opt_tree, layout):
    home = tmp_path / "home"
    home.mkdir()
    real_python(opt_tree / layout)
    r, chosen = discovered(tmp_path, home, opt=opt_tree)
    assert chosen == "/opt/" + layout, r.stderr


def test_too_old_python3_is_skipped_for_a_newer_conda_one(tmp_path):
    home = tmp_path / "home"
    fake_python(tmp_path / "empty-bin", "3.6.9")
    want = real_python(home / "miniconda3" / "bin" / "python")
    r, chosen = discovered(tmp_path, home)
    assert chosen == str(want), r.stderr


def test_no_python_and_old_python_messages_name_both_ways_to_choose_one(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    r, _ = discovered(tmp_path, home, choose_only=False)
    assert r.returncode == wire.EXIT_NO_PYTHON, r.stderr
    msg = bootstrap.explain_exit(r.returncode, r.stderr)
    assert "--remote-python" in msg and 'python = "PATH"' in msg and "miniconda3" in msg
    fake_python(tmp_path / "empty-bin", "3.6.9")
    r, _ = discovered(tmp_path, home, choose_only=False)
    msg = bootstrap.explain_exit(r.returncode, r.stderr)
    assert r.returncode == wire.EXIT_PYTHON_TOO_OLD and "3.6.9" in msg
    assert "--remote-python" in msg and 'python = "PATH"' in msg


def test_configured_python_with_a_tilde_is_the_box_users_home(tmp_path):
    home = tmp_path / "home"
    real_python(home / "envs" / "py" / "bin" / "python")
    cmd = bootstrap.probe_script("abc", mode="once", explicit_python="~/envs/py/bin/python")
    cmd = cmd.replace('exec "$P"', 'echo "CHOSEN=$P"; exit 0; exec "$P"').replace('[ ! -f "$F" ]', 'false')
    r = run(cmd, home, "/bin")
    assert "CHOSEN=%s/envs/py/bin/python" % home in r.stdout, r.stderr
