"""The command that starts the probe on the box, and what its exit codes mean.

Like sshuttle's stub: find a python, check its version, exec the probe; each failure
has its own exit code so the user reads "no python3 on the box", not "exit status 1".
The script is POSIX sh and runs under ``sh -c`` so a fish or zsh login shell does not
matter. Every value that goes into it is quoted with shlex.quote.
"""

import shlex

from remote_probe import protocol
from remote_probe.protocol import (
    EXIT_DAEMON_UNREACHABLE,
    EXIT_NO_PYTHON,
    EXIT_PROBE_CRASHED,
    EXIT_PROBE_MISSING,
    EXIT_PYTHON_TOO_OLD,
)

DEFAULT_REMOTE_DIR = ".cache/gputui"
# Non-interactive SSH shells often miss conda's PATH; these are common places.
PYTHON_CANDIDATES = ("python3", "python", "/usr/bin/python3", "/usr/local/bin/python3",
                     "/opt/conda/bin/python3", "/root/miniconda3/bin/python3")

SCRIPT = r'''
P=; OLD=
for c in {candidates}; do
  command -v "$c" >/dev/null 2>&1 || continue
  if "$c" -c 'import sys; sys.exit(0 if sys.version_info >= ({major}, {minor}) else 1)' 2>/dev/null; then
    P=$c; break
  fi
  [ -n "$OLD" ] || OLD=$("$c" -V 2>&1)
done
if [ -z "$P" ]; then
  if [ -n "$OLD" ]; then echo "gputui: $OLD is too old" >&2; exit {too_old}; fi
  echo "gputui: no python3 or python on PATH" >&2; exit {no_python}
fi
D={dir}
F="$D"/{file}
[ -f "$F" ] || exit {missing}
exec "$P" "$F" {args}
'''


def remote_dir_expr(remote_dir):
    """The remote dir as a shell word: relative paths are relative to $HOME."""
    remote_dir = remote_dir or DEFAULT_REMOTE_DIR
    if remote_dir.startswith("/"):
        return shlex.quote(remote_dir)
    return '"$HOME"/' + shlex.quote(remote_dir)


def probe_command(sha, mode="attach", simulate=None, remote_dir=None, candidates=PYTHON_CANDIDATES):
    """The full command line to run over SSH exec."""
    from tui.remote.probe_bundle import probe_filename
    args = [mode, "--state-dir", '"$D"']
    if simulate:
        args += ["--simulate", shlex.quote(simulate)]
    script = SCRIPT.format(
        candidates=" ".join(shlex.quote(c) for c in candidates),
        major=protocol.MIN_PYTHON[0], minor=protocol.MIN_PYTHON[1],
        too_old=EXIT_PYTHON_TOO_OLD, no_python=EXIT_NO_PYTHON, missing=EXIT_PROBE_MISSING,
        dir=remote_dir_expr(remote_dir), file=shlex.quote(probe_filename(sha)),
        args=" ".join(args),
    )
    return "/bin/sh -c " + shlex.quote(script)


def explain_exit(code, stderr=""):
    """A one-line message for an exit status of the probe command."""
    detail = (stderr or "").strip().splitlines()
    last = detail[-1] if detail else ""
    if code == EXIT_NO_PYTHON:
        return ("No python3 on the box: the probe needs Python %d.%d+ "
                "(install python3, e.g. `apt install python3`)" % protocol.MIN_PYTHON)
    if code == EXIT_PYTHON_TOO_OLD:
        return ("The box's Python is too old (%s); the probe needs Python %d.%d+"
                % (last.replace("gputui: ", "").replace(" is too old", "") or "unknown",
                   *protocol.MIN_PYTHON))
    if code == EXIT_PROBE_MISSING:
        return "The probe is not deployed on the box"
    if code == EXIT_PROBE_CRASHED:
        return "The probe crashed on the box: %s" % (last or "no output")
    if code == EXIT_DAEMON_UNREACHABLE:
        return "The probe daemon on the box could not be reached: %s" % (last or "no output")
    if code == 127:
        return "The box could not run the probe command: %s" % (last or "command not found")
    return "The probe exited with status %s%s" % (code, ": " + last if last else "")
