"""The quick exit of the entry points (issue 26): it skips only the interpreter's teardown; what
an ordinary exit does for the user (its output, the log, atexit work, running threads) still
happens, and the exit status is the command's."""

import subprocess
import sys

import pytest

from tests.support import REPO
from tui.cli.process_exit import exit_code


def run(code):
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=60)


@pytest.mark.parametrize("code, status", [(None, 0), (0, 0), (3, 3), (130, 130), ("gputui: no", 1)])
def test_exit_code_means_what_sys_exit_does(code, status):
    assert exit_code(code) == status


def test_output_log_and_atexit_work_survive_the_quick_exit(tmp_path):
    log = tmp_path / "debug.log"
    out = run("import atexit, logging, sys\n"
              "from tui.cli.process_exit import exit_now\n"
              "logging.basicConfig(filename=%r, level=logging.DEBUG)\n"
              "logging.getLogger('gputui').info('the last line')\n"
              "atexit.register(lambda: print('atexit ran', file=sys.stderr))\n"
              "sys.stdout.write('no newline, still buffered')\n"
              "exit_now(3)\n" % str(log))
    assert out.returncode == 3, out.stderr
    assert out.stdout == "no newline, still buffered"
    assert "atexit ran" in out.stderr
    assert "the last line" in log.read_text()


def test_a_thread_still_running_is_waited_for(tmp_path):
    out = run("import threading, time\n"
              "from tui.cli.process_exit import exit_now\n"
              "threading.Thread(target=lambda: (time.sleep(0.3), print('thread done'))).start()\n"
              "exit_now(0)\n")
    assert out.returncode == 0 and out.stdout.strip() == "thread done", out.stderr


def test_python_m_tui_keeps_its_exit_status():
    out = subprocess.run([sys.executable, "-m", "tui", "status", "nobody@127.0.0.1:1"], cwd=REPO,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 2 and "Connection refused" in out.stderr, out.stderr
