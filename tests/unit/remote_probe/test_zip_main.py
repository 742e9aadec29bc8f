"""The zipapp unpacks itself beside the .pyz on its first start so the box's python keeps
bytecode; any copy it cannot trust or make leaves the probe running from the zip."""

import os
import subprocess
import sys

import pytest

from tui.remote.probe.bundle import build_probe, probe_filename

def run(pyz, *args, env_extra=None):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.path.dirname(pyz)}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, pyz] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=60, env=env)


def imported_from(pyz):
    """Where the probe's package is imported from when the zipapp starts: its own __main__,
    run as python runs it, with entry() swapped for a print."""
    code = ("import sys, zipimport; sys.argv = [%r, '--version']; sys.path.insert(0, %r);"
            "src = zipimport.zipimporter(%r).get_source('__main__')"
            ".replace('entry()', 'print(sys.modules[\"remote_probe\"].__file__)');"
            "exec(compile(src, '__main__', 'exec'), {'__name__': '__main__'})" % (pyz, pyz, pyz))
    out = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[-1]


@pytest.fixture
def pyz(tmp_path):
    data, sha = build_probe()
    home = tmp_path / "cache"
    home.mkdir(mode=0o700)
    path = home / probe_filename(sha)
    path.write_bytes(data)
    return str(path)


def test_first_start_unpacks_and_later_starts_import_from_the_copy_with_bytecode(pyz):
    first = run(pyz, "scenarios")
    assert first.returncode == 0 and "a100x2" in first.stdout, first.stderr
    home = pyz[:-4] + ".d"
    assert oct(os.stat(home).st_mode & 0o777) == "0o700"
    assert os.path.isfile(os.path.join(home, "remote_probe", "daemon.py"))
    assert os.path.isfile(os.path.join(home, "pynvml.py"))
    assert imported_from(pyz).startswith(home + os.sep)
    assert os.listdir(os.path.join(home, "remote_probe", "__pycache__"))  # what the copy is for
    assert not [n for n in os.listdir(os.path.dirname(pyz)) if ".tmp-" in n or ".old-" in n]
    again = run(pyz, "once", "--simulate", "a100x2", "--state-dir", os.path.dirname(pyz))
    assert again.returncode == 0 and '"gpus"' in again.stdout, again.stderr


def test_a_copy_missing_a_file_is_made_again(pyz):
    assert run(pyz, "scenarios").returncode == 0
    home = pyz[:-4] + ".d"
    os.unlink(os.path.join(home, "remote_probe", "daemon.py"))  # a /tmp cleaner took it
    again = run(pyz, "once", "--simulate", "a100x2", "--state-dir", os.path.dirname(pyz))
    assert again.returncode == 0, again.stderr
    assert os.path.isfile(os.path.join(home, "remote_probe", "daemon.py"))


def test_a_copy_others_can_write_is_replaced_not_imported(pyz):
    home = pyz[:-4] + ".d"
    os.makedirs(os.path.join(home, "remote_probe"))
    with open(os.path.join(home, "remote_probe", "__init__.py"), "w") as f:
        f.write("raise SystemExit('planted code ran')\n")
    os.chmod(home, 0o777)
    out = run(pyz, "scenarios")
    assert out.returncode == 0 and "planted" not in out.stderr, out.stderr
    assert oct(os.stat(home).st_mode & 0o777) == "0o700"
    assert imported_from(pyz).startswith(home + os.sep)


def test_no_copy_on_a_read_only_disk_and_the_zip_still_runs(pyz, monkeypatch):
    import errno

    import remote_probe.zip_main as zip_main

    def read_only(path, mode=0o777):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(zip_main.os, "mkdir", read_only)
    assert zip_main.unpacked(pyz, ("remote_probe/__init__.py",)) is None
    monkeypatch.undo()
    if os.geteuid() != 0:  # root writes through a read-only mode: the part above stands in
        os.chmod(os.path.dirname(pyz), 0o500)
        try:
            out = run(pyz, "scenarios")
            assert out.returncode == 0 and "a100x2" in out.stdout, out.stderr
            assert not os.path.exists(pyz[:-4] + ".d")
            assert imported_from(pyz).startswith(pyz + os.sep)
        finally:
            os.chmod(os.path.dirname(pyz), 0o700)


def test_a_full_disk_leaves_no_half_copy_and_the_zip_still_runs(pyz, monkeypatch):
    """Simulated in-process: extraction fails half way (ENOSPC) -> no .d, no temp dir."""
    import errno
    import zipfile

    import remote_probe.zip_main as zip_main
    calls = []

    def full(self, path=None, members=None, pwd=None):
        os.makedirs(os.path.join(path, "remote_probe"))
        calls.append(path)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(zipfile.ZipFile, "extractall", full)
    assert zip_main.unpacked(pyz, ("remote_probe/__init__.py",)) is None
    assert calls and not os.path.exists(calls[0])
    assert os.listdir(os.path.dirname(pyz)) == [os.path.basename(pyz)]


def test_the_bundle_names_its_files_in_its_main():
    import io
    import zipfile
    data, _ = build_probe()
    zf = zipfile.ZipFile(io.BytesIO(data))
    main = zf.read("__main__.py").decode()
    names = [n for n in zf.namelist() if n != "__main__.py"]
    assert "FILES = None" not in main
    for name in ("remote_probe/daemon.py", "remote_probe/scenarios/a100x2.json", "pynvml.py"):
        assert repr(name) in main and name in names
    assert build_probe()[1] == build_probe.__wrapped__()[1]  # still deterministic


def test_a_good_copy_another_start_made_meanwhile_is_kept(pyz, monkeypatch):
    """Two first starts at once (attach and a second laptop): the one that finishes second must
    not move away the copy the first is importing from."""
    import zipfile

    import remote_probe.zip_main as zip_main
    home = pyz[:-4] + ".d"
    real = zipfile.ZipFile.extractall

    def racing(self, path=None, members=None, pwd=None):
        real(self, path, members, pwd)
        if not os.path.exists(home):  # the other start wins the race while this one extracts
            os.mkdir(home + ".other", 0o700)
            real(self, home + ".other", members, pwd)
            os.rename(home + ".other", home)
            open(os.path.join(home, "marker-of-the-first"), "w").close()

    monkeypatch.setattr(zipfile.ZipFile, "extractall", racing)
    files = ("remote_probe/__init__.py", "remote_probe/daemon.py")
    assert zip_main.unpacked(pyz, files) == home
    assert os.path.exists(os.path.join(home, "marker-of-the-first"))  # the same copy, untouched
    assert sorted(os.listdir(os.path.dirname(pyz))) == sorted([os.path.basename(pyz), os.path.basename(home)])


def test_a_symlink_in_place_of_the_copy_is_replaced_not_followed(pyz, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "remote_probe").mkdir(parents=True)
    (elsewhere / "remote_probe" / "__init__.py").write_text("raise SystemExit('followed a link')\n")
    os.symlink(str(elsewhere), pyz[:-4] + ".d")
    out = run(pyz, "scenarios")
    assert out.returncode == 0 and "followed" not in out.stderr, out.stderr
    assert not os.path.islink(pyz[:-4] + ".d")
    assert (elsewhere / "remote_probe" / "__init__.py").exists()  # nothing deleted through it
    assert not [n for n in os.listdir(os.path.dirname(pyz)) if ".old-" in n or ".tmp-" in n]


def test_a_module_taken_from_the_copy_while_the_probe_runs_comes_from_the_zip(pyz):
    """A daemon imports the checklist's module only when first asked; a walk-through deleted
    that file from the copy while the daemon ran and every checklist failed with ImportError
    until the daemon was killed by hand."""
    assert run(pyz, "scenarios").returncode == 0
    home = pyz[:-4] + ".d"
    code = ("import sys, zipimport; sys.argv = [%r, '--version'];"
            "src = zipimport.zipimporter(%r).get_source('__main__')"
            ".replace('entry()', 'import os; os.unlink(os.path.join(_home, \\\"remote_probe\\\", "
            "\\\"files\\\", \\\"checklist_facts.py\\\")); import remote_probe.files.checklist_facts as m; print(m.__file__)');"
            "exec(compile(src, '__main__', 'exec'), {'__name__': '__main__'})" % (pyz, pyz))
    # -S: no site, as on a box (this venv's editable install would find the module in the tree)
    out = subprocess.run([sys.executable, "-S", "-c", code], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().startswith(pyz + os.sep), out.stdout  # from the zip
    assert not os.path.exists(os.path.join(home, "remote_probe", "files", "checklist_facts.py"))
    assert run(pyz, "scenarios").returncode == 0  # the next start remakes the copy
    assert os.path.exists(os.path.join(home, "remote_probe", "files", "checklist_facts.py"))
