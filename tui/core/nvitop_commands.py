"""nvitop one key away: the commands that find, install and run nvitop on a box.

nvitop is installed only into gputui's own remote dir (`pip install --target`): no root, no
change to any of the user's environments, removed with the remote dir. Every value that goes
into a command is shell-quoted; the remote dir is relative to $HOME like the probe's.
"""

import re
import shlex
from typing import Any, List, Optional, Sequence

from tui.core.text import paste
from tui.core.i18n import _

DEFAULT_REMOTE_DIR = ".cache/gputui"  # the probe's default (tui.remote.bootstrap)
SUBDIR = "nvitop"
PACKAGE = "nvitop"
# What the doctor's "reach pypi.org" check suggests when PyPI is blocked (common on boxes in
# mainland China); the host's `pip_index_url` setting wins.
MIRROR_HINT = "https://pypi.tuna.tsinghua.edu.cn/simple"

# pip's words for "the index could not be reached" (DNS, refused, timeout, proxy, TLS).
NETWORK_PATTERNS = (
    r"Failed to establish a new connection", r"Temporary failure in name resolution",
    r"Name or service not known", r"Network is unreachable", r"Connection refused",
    r"Read timed out", r"ConnectTimeoutError", r"ProxyError", r"SSLError",
    r"Could not fetch URL", r"No route to host", r"connection timed out",
)


def dir_expr(remote_dir: Optional[str] = None) -> str:
    """The nvitop install dir as a shell word: relative paths are relative to $HOME."""
    base = (remote_dir or DEFAULT_REMOTE_DIR).rstrip("/")
    path = base + "/" + SUBDIR
    return paste.box_path_word(path)


def _pythonpath(remote_dir: Optional[str]) -> str:
    return "PYTHONPATH=%s${PYTHONPATH:+:$PYTHONPATH}" % dir_expr(remote_dir)


def install_command(remote_dir: Optional[str] = None, python: str = "python3",
                    index_url: Optional[str] = None, find_links: Optional[str] = None,
                    no_index: bool = False, package: str = PACKAGE) -> str:
    """The exact command shown to the user and run on the box (POSIX sh)."""
    # shown to the user to paste (bash, zsh, fish) and run on the box by /bin/sh
    words = [paste.quote(python), "-m", "pip", "install", "--disable-pip-version-check",
             "--no-input", "--retries", "1", "--timeout", "15", "--upgrade",
             "--target", dir_expr(remote_dir)]
    if index_url:
        words += ["--index-url", paste.quote(index_url)]
    if find_links:
        words += ["--find-links", paste.quote(find_links)]
    if no_index:
        words.append("--no-index")
    words.append(paste.quote(package))
    return " ".join(words)


def check_command(remote_dir: Optional[str] = None, python: str = "python3") -> str:
    """Exit 0 when nvitop is on the box: on PATH (the user installed it) or in gputui's dir."""
    return ("command -v nvitop >/dev/null 2>&1 || %s %s -c 'import nvitop' >/dev/null 2>&1"
            % (_pythonpath(remote_dir), shlex.quote(python)))


def run_command(remote_dir: Optional[str] = None, python: str = "python3",
                args: Sequence[str] = ()) -> str:
    """Run nvitop: the user's own if on PATH, else the one in gputui's dir."""
    rest = "".join(" " + shlex.quote(a) for a in args)
    return ("if command -v nvitop >/dev/null 2>&1; then exec nvitop%s; fi; %s exec %s -m nvitop%s"
            % (rest, _pythonpath(remote_dir), shlex.quote(python), rest))


def terminal_argv(target: Any, remote_command: str, ssh_binary: str = "ssh") -> List[str]:
    """`ssh -t HOST sh -c '<command>'` with the user's ssh (like tmux attach): the app
    suspends, nvitop gets the real terminal, the app comes back when it exits."""
    argv = [ssh_binary, "-t"]
    if hasattr(target, "ssh_args"):  # the same -F -p -l -i -J -o as tmux attach (issue 23)
        return argv + list(target.ssh_args()) + ["--", target.host,
                                                 "/bin/sh -c %s" % shlex.quote(remote_command)]
    if getattr(target, "ssh_config", None):
        argv += ["-F", target.ssh_config]
    if getattr(target, "port", None):
        argv += ["-p", str(target.port)]
    user = getattr(target, "username", None)
    argv.append(target.host if not user else "%s@%s" % (user, target.host))
    argv.append("/bin/sh -c %s" % shlex.quote(remote_command))
    return argv


def install_failure(output: Optional[str], exit_code: object, index_url: Optional[str] = None) -> str:
    """Why `pip install` failed, in one or two sentences the user can act on."""
    text = output or ""
    if re.search(r"No module named pip", text):
        return _("The box's python has no pip (exit %s). Install it for your user "
                 "(`python3 -m ensurepip --user`) or pick a python with pip (`python` for this "
                 "host in the config).") % exit_code
    if any(re.search(p, text, re.IGNORECASE) for p in NETWORK_PATTERNS):
        where = index_url or "PyPI (pypi.org)"
        return _("The box cannot reach %s, so nvitop cannot be installed there. `gputui doctor` "
                 "checks this too (\"reach pypi.org\"). Use a mirror: set pip_index_url for this "
                 "host, e.g. pip_index_url = \"%s\".") % (where, MIRROR_HINT)
    if re.search(r"No matching distribution|Could not find a version", text):
        return _("pip found no nvitop for the box's python (exit %s); nvitop needs Python 3.7+ "
                 "and Linux.") % exit_code
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return _("pip failed (exit %s): %s") % (exit_code, lines[-1] if lines else _("no output"))
