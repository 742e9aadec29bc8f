"""A local source that does not exist is refused before any connection (tester4's finding:
it connected, then said "push stopped ... run the same command again to continue")."""

import subprocess
import sys


def test_a_missing_local_source_is_refused_before_connecting(isolated_dirs, tmp_path):
    there = tmp_path / "real.txt"
    there.write_text("x")
    r = subprocess.run([sys.executable, "-m", "tui", "push", str(there), str(tmp_path / "gone"),
                        "nowhere.invalid:/x"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 2, r.stderr
    assert "no such local file or folder: %s" % (tmp_path / "gone") in r.stderr
    assert "again" not in r.stderr and "nowhere.invalid" not in r.stderr  # no connect was tried


def test_a_box_that_cannot_be_reached_is_not_called_a_transfer_to_resume(isolated_dirs, tmp_path):
    """A walk-through got 'push stopped: ...; run the same command again to continue' for an
    unreachable box (and for a refused login): nothing moved, and again fails alike."""
    there = tmp_path / "real.txt"
    there.write_text("x")
    for argv in (["push", str(there), "nobody@127.0.0.1:1:/x"], ["pull", "nobody@127.0.0.1:1:/x", str(tmp_path)]):
        r = subprocess.run([sys.executable, "-m", "tui", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert r.returncode == 2, r.stderr
        assert "127.0.0.1" in r.stderr and "again to continue" not in r.stderr, r.stderr
