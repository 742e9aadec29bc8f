"""Start-up of headless commands (issue 26): asyncssh is loaded only by commands that reach a
box, and without the ldconfig/gcc/ld runs of its liboqs lookup."""

import subprocess
import sys

from tests.support import REPO
from tui.remote import asyncssh_import


def test_liboqs_found_from_the_directory_listing(tmp_path, monkeypatch):
    (tmp_path / "liboqs.so.5").write_bytes(b"")
    monkeypatch.setenv("LD_LIBRARY_PATH", str(tmp_path))
    assert asyncssh_import.find_oqs("oqs") == str(tmp_path / "liboqs.so.5")
    assert asyncssh_import.find_oqs("liboqs") == str(tmp_path / "liboqs.so.5")


def test_no_liboqs_no_subprocess(tmp_path, monkeypatch):
    monkeypatch.setenv("LD_LIBRARY_PATH", str(tmp_path))
    monkeypatch.setattr(asyncssh_import, "LIB_DIRS", ())
    monkeypatch.setattr(subprocess, "Popen", None)  # any ldconfig/gcc run would fail here
    assert asyncssh_import.find_oqs("oqs") is None


def test_other_libraries_looked_up_as_before(monkeypatch):
    monkeypatch.setattr(asyncssh_import, "_real_find_library", lambda name: "lib%s.so" % name)
    assert asyncssh_import.find_oqs("c") == "libc.so"


def test_find_library_is_restored_after_the_import():
    import ctypes.util
    assert ctypes.util.find_library is asyncssh_import._real_find_library


def test_commands_that_reach_no_box_do_not_load_asyncssh():
    for argv in (["--help"], ["scenarios"]):
        code = ("import sys; from tui.cli import main\ntry:\n    main(%r)\nexcept SystemExit:\n"
                "    pass\nprint('LOADED' if 'asyncssh' in sys.modules else 'NOT-LOADED')" % argv)
        out = subprocess.run([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, timeout=60)
        assert out.stdout.strip().endswith("NOT-LOADED"), (argv, out.stdout[-500:], out.stderr[-2000:])
