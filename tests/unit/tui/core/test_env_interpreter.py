""""Environment captured" freezes the running job's interpreter, as the job started it (a
venv's bin/python, not the /usr/bin/python3 its /proc exe resolves to), and says which one
(issue 23). Real processes, real /proc, a real venv."""

import os
import subprocess
import sys
import time

import pytest

from remote_probe.files import checklist_facts
from tui.core.checks.checklist import check_env, env_frozen_text, frozen_python


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    where = tmp_path_factory.mktemp("venvs") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    return where


def start(argv, **kw):
    p = subprocess.Popen(argv + ["-c", "import time; time.sleep(60)"], **kw)
    for _ in range(100):  # until it has exec'd (a forked child is pytest's python before)
        try:
            with open("/proc/%d/cmdline" % p.pid, "rb") as f:
                if b"time.sleep" in f.read():
                    break
        except OSError:
            pass
        time.sleep(0.05)
    return p


@pytest.mark.parametrize("how", ["absolute", "relative", "on PATH"])
def test_job_interpreter_is_the_venv_python(venv, how, tmp_path):
    py = venv / "bin" / "python"
    if how == "absolute":
        p = start([str(py)])
    elif how == "relative":
        p = start(["./bin/python"], cwd=str(venv))
    else:
        env = dict(os.environ, PATH="%s:%s" % (venv / "bin", os.environ.get("PATH", "")))
        p = start(["python"], env=env)
    try:
        assert os.path.realpath(os.readlink("/proc/%d/exe" % p.pid)) != str(py)  # exe is the base
        python, pid = checklist_facts.job_interpreter([999999999, p.pid])
        assert (python, pid) == (str(py), p.pid)
        reply = checklist_facts.env_capture(None, [p.pid])
        assert reply["python"] == str(py) and reply["python_source"] == "job"
    finally:
        p.kill()
        p.wait()


def test_no_python_job_falls_back_and_says_so():
    p = subprocess.Popen(["sleep", "30"])
    try:
        assert checklist_facts.job_interpreter([p.pid]) == (None, None)
        reply = checklist_facts.env_capture(None, [p.pid])
        assert reply["python_source"] == "default"
        assert "no running job uses python" in env_frozen_text(reply)
    finally:
        p.kill()
        p.wait()
    assert checklist_facts.env_capture("/opt/py/bin/python", [1])["python_source"] == "config"


@pytest.mark.parametrize("reply,said", [
    ({"python": "/root/venv/bin/python", "python_source": "job", "python_pid": 4100},
     "froze /root/venv/bin/python, the running job's interpreter (PID 4100)"),
    ({"python": "/opt/py", "python_source": "config"}, "froze /opt/py, the python set for this host"),
    ({"python": "/usr/bin/python3", "python_source": "default"}, "froze /usr/bin/python3, the box's python3"),
    ({"python": "/x/\x1b[2Jpython", "python_source": "default"}, "froze /x/"),  # box text: escaped
])
def test_frozen_text(reply, said):
    text = env_frozen_text(reply)
    assert text.startswith(said) and "\x1b" not in text


def test_checklist_row_names_the_frozen_interpreter(tmp_path):
    (tmp_path / "pip-freeze.txt").write_text("# /root/venv/bin/python on box, 2026-12-01 23:00\ntorch==2.4\n")
    assert frozen_python(str(tmp_path)) == "/root/venv/bin/python"
    item = check_env(str(tmp_path))
    assert "/root/venv/bin/python frozen" in item.reason
