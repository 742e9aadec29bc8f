"""The bootstrap stub, run by a real /bin/sh with controlled PATHs."""

import json
import subprocess

import pytest

from remote_probe import wire
from tui.remote import bootstrap
from tui.remote.probe_bundle import build_probe, probe_filename


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
