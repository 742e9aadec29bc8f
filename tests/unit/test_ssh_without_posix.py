"""Windows laptops (issue 23): the ssh package imports and resolves a destination where the
POSIX-only modules `pwd`, `fcntl` and `termios` do not exist. Run in a fresh interpreter in
which gputui's own code (tui, remote_probe) cannot import them, as on Windows; third-party
code keeps them (asyncssh picks its Windows branch by sys.platform, not by trying)."""

import json
import os
import shutil
import subprocess
import sys

from tests.support.sshd import REPO

BLOCKED = ("pwd", "fcntl", "termios")

CODE = r"""
import builtins, json, os, sys
real_import, tried = builtins.__import__, []

def windows_import(name, globals=None, locals=None, fromlist=(), level=0):
    importer = (globals or {}).get("__name__") or ""
    if name.split(".")[0] in %(blocked)r and importer.split(".")[0] in ("tui", "remote_probe"):
        tried.append("%%s imports %%s" %% (importer, name))
        raise ImportError("No module named %%r" %% name)
    return real_import(name, globals, locals, fromlist, level)

builtins.__import__ = windows_import
from tui.remote import ssh
del os.getuid  # Windows has no uid either
t = ssh.Target.parse(["-p", "2222", "-l", "alice", "mybox"])
res = ssh.resolve(t, binary="")  # no ssh binary: asyncssh's parser reads ~/.ssh/config
print(json.dumps({"tried": tried,
                  "host": res.hostname, "port": res.port, "user": res.user,
                  "keys": res.identity_files, "passwd_home": ssh.passwd_home(),
                  "token": ssh.expand_tokens("%%i-%%r@%%h", ssh.token_context(
                      "mybox", res.hostname, res.port, res.user))}))
"""


def test_ssh_imports_and_resolves_without_posix_modules(tmp_path):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "config").write_text(
        "Host mybox\n  HostName 10.1.2.3\n  IdentityFile ~/.ssh/box_key\n")
    env = dict(os.environ, HOME=str(home), USER="alice", PYTHONPATH=REPO)
    out = subprocess.run([sys.executable, "-c", CODE % {"blocked": BLOCKED}], cwd=str(tmp_path),
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert set(got["tried"]) == {"tui.core.ssh_g imports pwd"}  # only where used (passwd_home, issue 38 moved it)
    assert (got["host"], got["port"], got["user"]) == ("10.1.2.3", 2222, "alice")
    assert got["keys"][0] == str(home / ".ssh" / "box_key")
    assert got["passwd_home"] == str(home)  # no passwd database: $HOME is the home
    assert got["token"] == "-alice@10.1.2.3"  # %i has no uid to give


def test_a_module_top_import_of_pwd_fails_the_check(tmp_path):
    """The check can fail: `import pwd` at the top of a tui module stops the import."""
    tree = tmp_path / "tree"
    shutil.copytree(os.path.join(REPO, "tui"), tree / "tui")
    with open(tree / "tui" / "remote" / "ssh" / "target.py", "a") as f:
        f.write("import pwd\n")
    env = dict(os.environ, HOME=str(tmp_path), USER="alice", PYTHONPATH=str(tree))
    out = subprocess.run([sys.executable, "-c", CODE % {"blocked": BLOCKED}], cwd=str(tmp_path),
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         timeout=60)
    assert out.returncode != 0 and "No module named 'pwd'" in out.stderr, out.stderr
