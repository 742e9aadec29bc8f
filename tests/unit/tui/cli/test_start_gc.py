"""tui.start (issue 38): the console script's process starts with the cyclic garbage collector
off, and main() turns it back on for the commands that run long; the quick ones end with it off."""

import subprocess
import sys

import pytest

from tests.support import REPO

PROBE = ("import atexit, gc, sys\n"
         "atexit.register(lambda: print('gc enabled at exit:', gc.isenabled(), flush=True))\n"
         "sys.argv = ['gputui'] + %r\n"
         "from tui.start import main\n"
         "main()\n")


def gc_at_exit(argv, tmp_path):
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin",
           **{"GPUTUI_%s_DIR" % v: str(tmp_path / v.lower()) for v in ("CONFIG", "STATE", "DATA")}}
    out = subprocess.run([sys.executable, "-c", PROBE % (argv,)], cwd=REPO, env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60, stdin=subprocess.DEVNULL)
    lines = [l for l in out.stdout.splitlines() if l.startswith("gc enabled at exit:")]
    assert lines, (out.returncode, out.stdout[-1000:], out.stderr[-2000:])
    return out.returncode, lines[-1].endswith("True")


@pytest.mark.parametrize("argv", [["status", "nobody@127.0.0.1:1"], ["ledger", "--csv"], ["scenarios"]])
def test_a_quick_command_ends_with_the_collector_off(argv, tmp_path):
    rc, enabled = gc_at_exit(argv, tmp_path)
    assert not enabled, (argv, rc)


def test_a_long_command_gets_the_collector_back(tmp_path):
    (tmp_path / "here").mkdir()
    rc, enabled = gc_at_exit(["pull", "nobody@127.0.0.1:1:/nothing", str(tmp_path / "here")], tmp_path)
    assert rc != 0  # nothing listens there: it failed to connect, after main() turned gc back on
    assert enabled


def test_the_console_script_and_python_m_tui_start_there():
    from tui.core.config import tomllib  # tomli before Python 3.11
    with open("%s/pyproject.toml" % REPO, "rb") as f:
        assert tomllib.load(f)["project"]["scripts"]["gputui"] == "tui.start:main"
    with open("%s/tui/__main__.py" % REPO) as f:
        assert "from tui.start import main" in f.read()
