"""Start-up of headless commands (issue 26): asyncssh is loaded only by commands that reach a
box, and without the ldconfig/gcc/ld runs of its liboqs lookup."""

import subprocess
import sys

import pytest

from tests.support import REPO
from tui.remote import asyncssh_import


def test_liboqs_found_from_the_directory_listing(tmp_path, monkeypatch):
    (tmp_path / "liboqs.so.5").write_bytes(b"")
    monkeypatch.setenv("LD_LIBRARY_PATH", str(tmp_path))
    assert asyncssh_import.find_fast("oqs") == str(tmp_path / "liboqs.so.5")
    assert asyncssh_import.find_fast("liboqs") == str(tmp_path / "liboqs.so.5")


def test_no_liboqs_no_subprocess(tmp_path, monkeypatch):
    monkeypatch.setenv("LD_LIBRARY_PATH", str(tmp_path))
    monkeypatch.setattr(asyncssh_import, "LIB_DIRS", ())
    monkeypatch.setattr(subprocess, "Popen", None)  # any ldconfig/gcc run would fail here
    assert asyncssh_import.find_fast("oqs") is None


def test_nettle_found_from_the_directory_listing(tmp_path, monkeypatch):
    (tmp_path / "libnettle.so.8").write_bytes(b"")
    monkeypatch.setenv("LD_LIBRARY_PATH", str(tmp_path))
    monkeypatch.setattr(subprocess, "Popen", None)
    assert asyncssh_import.find_fast("nettle") == str(tmp_path / "libnettle.so.8")
    assert asyncssh_import.find_fast("libnettle") == str(tmp_path / "libnettle.so.8")


def test_x509_skipped_only_where_it_would_fail(monkeypatch):
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if name == "OpenSSL" else real(name))
    monkeypatch.delitem(sys.modules, asyncssh_import.X509_MODULE, raising=False)
    assert asyncssh_import.skip_x509()
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())  # pyOpenSSL installed
    assert not asyncssh_import.skip_x509()


def test_asyncssh_without_pyopenssl_is_loaded_without_cryptography_x509():
    code = ("import importlib.util, sys\nif importlib.util.find_spec('OpenSSL'): sys.exit(3)\n"
            "import tui.remote, asyncssh\nprint(sorted(m for m in sys.modules if 'x509' in m),"
            " asyncssh.SSHClientConnection.__name__)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, timeout=60)
    if out.returncode == 3:
        pytest.skip("pyOpenSSL is installed here: asyncssh's X.509 support loads as it should")
    assert out.stdout.split() == ["[]", "SSHClientConnection"], out.stdout + out.stderr


def test_other_libraries_looked_up_as_before(monkeypatch):
    monkeypatch.setattr(asyncssh_import, "_real_find_library", lambda name: "lib%s.so" % name)
    assert asyncssh_import.find_fast("c") == "libc.so"


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


def test_importing_gputuis_ssh_side_prints_no_library_warning():
    """Every command imports asyncssh; cryptography's DSA deprecation, raised by asyncssh's own
    modules, must not reach the user's stderr (issue 37), even with warnings shown by default."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-W", "default", "-c", "import tui.remote, asyncssh"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    assert out.returncode == 0 and out.stderr == "", out.stderr


def test_other_warnings_still_show():
    import subprocess
    import sys
    code = ("import tui.remote, warnings; warnings.warn('DSA is deprecated here', DeprecationWarning)")
    out = subprocess.run([sys.executable, "-W", "default", "-c", code],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    assert "DSA is deprecated here" in out.stderr  # not asyncssh's import: not silenced


def test_packet_log_skipped_while_off_and_kept_at_debug_level_3(monkeypatch):
    """issue 38: no per-packet formatting while asyncssh's packet log is off; level 3 logs all."""
    import asyncssh.logging as alog
    import asyncssh.packet as apacket
    assert getattr(apacket.SSHPacketLogger._log_packet, "gputui_quiet", False)
    logged = []

    class Logger(apacket.SSHPacketLogger):
        _handler_names = {94: "MSG_CHANNEL_DATA"}

        @property
        def logger(self):
            return type("L", (), {"packet": lambda _s, *a, **k: logged.append(a)})()
    monkeypatch.setattr(alog.SSHLogger, "_debug_level", 1)
    Logger().log_received_packet(94, 7, b"payload")
    assert logged == []
    monkeypatch.setattr(alog.SSHLogger, "_debug_level", 3)
    Logger().log_received_packet(94, 7, b"payload")
    assert logged and "MSG_CHANNEL_DATA (94)" in logged[0]
    wrapped = apacket.SSHPacketLogger._log_packet
    asyncssh_import.quiet_packet_log(apacket, alog.SSHLogger)  # again: wrapped once only
    assert apacket.SSHPacketLogger._log_packet is wrapped
