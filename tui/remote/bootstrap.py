"""The script that starts the probe on the box, and what its answers mean.

Like sshuttle's stub: find a python, check its version, exec the probe; each failure
has its own exit code so the user reads "no python3 on the box", not "exit status 1".
Like mitogen's first stage, it also announces each step with a marker line
(``GTUI:<tag>:<WORD> detail``) on stdout, so the client can follow it through banners,
``conda activate`` chatter and title escapes from a talkative ``~/.bashrc``, and over a
terminal (PTY) where exit codes do not come back. When the probe is missing the script
says ``NEED`` and reads the zipapp from stdin, length-prefixed by the script itself
and sha256-checked before it is renamed into place: deploying needs neither SFTP nor a
silent shell.

The script is POSIX sh and runs under ``/bin/sh``, sent so that any login shell passes it
on unchanged (bash, zsh, dash, busybox sh, fish, csh, tcsh: tui.core.text.paste.any_shell).
Every value that goes into it is quoted with shlex.quote.
"""

import re
import secrets
import shlex

from remote_probe import wire
from remote_probe.wire import (
    EXIT_COMMAND_NOT_FOUND,
    EXIT_DAEMON_UNREACHABLE,
    EXIT_NO_PYTHON,
    EXIT_NO_WRITABLE_DIR,
    EXIT_PROBE_CRASHED,
    EXIT_PROBE_MISSING,
    EXIT_PYTHON_NOT_FOUND,
    EXIT_PYTHON_TOO_OLD,
    EXIT_UPLOAD_FAILED,
    EXIT_USAGE,
)
from tui.core.text import paste
from tui.core.i18n import _, ngettext

DEFAULT_REMOTE_DIR = ".cache/gputui"
# Where images keep a python when a non-interactive SSH shell's PATH misses it (conda's
# PATH comes from ~/.bashrc): sh words, tried in order, the first new enough wins; a too-old
# one is named in the error. Versioned names for images with python3.11 but no python3;
# the two-digit globs match python3.10, not python3.10-config.
PYTHON_CANDIDATES = (
    "python3", "python", "python3.13", "python3.12", "python3.11", "python3.10", "python3.9",
    "python3.8",
    '"${VIRTUAL_ENV:+$VIRTUAL_ENV/bin/python}"', '"${CONDA_PREFIX:+$CONDA_PREFIX/bin/python}"',
    "/usr/bin/python3", "/usr/local/bin/python3",
    "/usr/local/bin/python3.[0-9][0-9]", "/usr/local/bin/python3.[0-9]",
    "/opt/conda/bin/python3", "/opt/conda/bin/python",
    '"$HOME"/miniconda3/bin/python', '"$HOME"/anaconda3/bin/python',
    '"$HOME"/miniforge3/bin/python', '"$HOME"/mambaforge/bin/python',
    "/root/miniconda3/bin/python", "/opt/miniconda3/bin/python", "/opt/anaconda3/bin/python",
    '"$HOME"/.venv/bin/python', '"$HOME"/venv/bin/python', "/opt/venv/bin/python",
    "/opt/conda/envs/*/bin/python",
)
# Said when none is found (the message names the places looked in).
LOOKED_IN = "PATH, $VIRTUAL_ENV, $CONDA_PREFIX, /usr/local/bin, /opt/conda, ~/miniconda3, " \
    "~/anaconda3, ~/miniforge3, ~/.venv, ~/venv, /opt/venv"

# Reads exactly N bytes (raw, or base64 text when a terminal mangles raw bytes) from
# stdin, checks the sha256 and renames into place: a cut upload never leaves a probe.
RECEIVER = r'''
import base64, hashlib, os, sys
path, n, want, enc = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
buf = bytearray()
while len(buf) < n:
    b = os.read(0, min(n - len(buf), 1 << 16))
    if not b:
        break
    buf += b
data = base64.b64decode(bytes(buf)) if enc == "b64" else bytes(buf)
if hashlib.sha256(data).hexdigest() != want:
    sys.exit(1)
tmp = "%s.tmp-%d" % (path, os.getpid())
try:
    try:
        os.unlink(tmp)
    except OSError:
        pass
    # O_EXCL and O_NOFOLLOW: never written through a name someone else put there
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
except OSError as exc:
    try:
        os.unlink(tmp)
    except OSError:
        pass
    sys.stderr.write("gputui: %s\n" % exc)
    sys.exit(3)
'''

SCRIPT = r'''
T={tag}
say() {{ printf '\nGTUI:%s:%s\n' "$T" "$*"; }}
die() {{ say "ERR $1 $2"; echo "gputui: $2" >&2; exit "$1"; }}
say START
NL='
'
{explicit}P=; OLD=
for c in {candidates}; do
  [ -n "$c" ] || continue
  command -v "$c" >/dev/null 2>&1 || continue
  if "$c" -c 'import sys; sys.exit(0 if sys.version_info >= ({major}, {minor}) else 1)' 2>/dev/null; then
    P=$c; break
  fi
  # only a python that says its version counts as too old (not one that cannot run)
  [ -n "$OLD" ] || {{ V=$("$c" -V 2>&1); V=${{V%%"$NL"*}}; case $V in Python\ *) OLD=$V;; esac; }}
done
if [ -z "$P" ]; then
  [ -n "$OLD" ] && die {too_old} "$OLD is too old"
  die {no_python} "no python3 or python in {looked_in}"
fi
# Python, not test -d/-w/-O (they follow symlinks): the probe is run from this directory,
# so it must be ours, 0700, and reached through nothing another user can write or swap.
usable() {{
  WHY=$("$P" -c {dircheck} "$1" 2>&1) && return 0
  WHY=${{WHY%%"$NL"*}}; return 1
}}
D={dir}
U=$(id -u 2>/dev/null || "$P" -c 'import os; print(os.getuid())')
if ! usable "$D"; then
  W="$D"; D=; WHY0=$WHY
  for alt in {fallbacks}; do
    [ -n "$alt" ] && usable "$alt" && {{ D=$alt; break; }}
  done
  [ -n "$D" ] || die {no_dir} "$W is not writable ($WHY0){no_dir_hint}${{WHY:+ ($WHY)}}"
  say "NOTE $W is not writable; the probe lives in $D instead"
fi
# Upload into $D, raw then base64 ($1, $2: their sizes on the wire) -> 0 done,
# 3 could not write (a full disk), 1 corrupted both times.
upload() {{
  for enc in {encodings}; do
    say "NEED $enc"
    "$P" -c {receiver} "$D"/{file} "$1" {sha} "$enc"
    r=$?
    [ "$r" = 0 ] || [ "$r" = 3 ] && return "$r"
    shift
  done
  return 1
}}
F="$D"/{file}
if [ -n "{replace}" ] || [ ! -f "$F" ]; then
  [ -n "{upload}" ] || exit {missing}
  upload {sizes}; r=$?
  if [ "$r" = 3 ] && [ -n "{fall_back}" ]; then
    # our default place is full (or refuses the write): the fallbacks, like an unwritable one
    W="$D"
    for alt in {fallbacks}; do
      [ -n "$alt" ] && [ "$alt" != "$W" ] && usable "$alt" || continue
      D=$alt
      if [ -z "{replace}" ] && [ -f "$D"/{file} ]; then r=0; break; fi
      upload {sizes}; r=$?
      [ "$r" = 3 ] || break
    done
    [ "$r" = 0 ] && say "NOTE $W is full or refuses writes; the probe lives in $D instead"
  fi
  case $r in
    0) ;;
    3) die {upload_failed} "could not write the probe to $D (is the disk full? check df -h)";;
    *) die {upload_failed} "the probe arrived corrupted (sha256 mismatch) in $D";;
  esac
  F="$D"/{file}
  say "GOT"
fi
say "RUN $D"
exec "$P" "$F" {args}
'''

# Each upload attempt's size on the wire is a positional parameter ($1, then $2 after shift).
ENCODINGS = ("raw", "b64")


def remote_dir_expr(remote_dir):
    """The remote dir as a shell word: relative paths are relative to $HOME."""
    return paste.box_path_word(remote_dir or DEFAULT_REMOTE_DIR)


def new_tag():
    """A fresh marker tag: nothing echoed or left over from an earlier try matches it."""
    return secrets.token_hex(6)


def wire_sizes(size):
    """Bytes on the wire for each encoding in ENCODINGS (raw, then base64)."""
    return (size, 4 * ((size + 2) // 3))


def probe_script(sha, mode="attach", simulate=None, remote_dir=None,
                 candidates=PYTHON_CANDIDATES, tag="0", upload=False, replace=False,
                 explicit_python=None, size=0):
    """The sh script itself (run it with its positional parameters: see probe_command)."""
    from tui.remote.probe.bundle import probe_filename
    args = [mode, "--state-dir", '"$D"']
    if simulate:
        args += ["--simulate", shlex.quote(simulate)]
    explicit = ""
    if explicit_python:
        # `python = "~/venv/bin/python"` in the config: ~ is the box user's home
        q = paste.box_path_word(explicit_python) if explicit_python.startswith("~/") \
            else shlex.quote(explicit_python)
        if "/" in explicit_python:
            explicit = ('[ -e %s ] || die %d "%s does not exist on the box"\n'
                        '[ -x %s ] || die %d "%s is not executable"\n'
                        % (q, EXIT_PYTHON_NOT_FOUND, '"' + _dq(explicit_python) + '"',
                           q, EXIT_PYTHON_NOT_FOUND, '"' + _dq(explicit_python) + '"'))
        else:
            explicit = ('command -v %s >/dev/null 2>&1 || die %d "%s is not on PATH on the box"\n'
                        % (q, EXIT_PYTHON_NOT_FOUND, '"' + _dq(explicit_python) + '"'))
        candidates = (q,)
    return SCRIPT.format(
        tag=shlex.quote(tag), explicit=explicit, looked_in=_dq(LOOKED_IN),
        # our own sh words (globs and $HOME expand); a python the user named is quoted above
        candidates=" ".join(candidates),
        major=wire.MIN_PYTHON[0], minor=wire.MIN_PYTHON[1],
        too_old=EXIT_PYTHON_TOO_OLD, no_python=EXIT_NO_PYTHON, missing=EXIT_PROBE_MISSING,
        no_dir=EXIT_NO_WRITABLE_DIR, upload_failed=EXIT_UPLOAD_FAILED,
        dir=remote_dir_expr(remote_dir),
        # Only our default place falls back; a --remote-dir the user chose is kept or refused.
        fall_back="" if remote_dir else "1",
        fallbacks=("" if remote_dir else
                   '"${XDG_RUNTIME_DIR:+$XDG_RUNTIME_DIR/gputui}" "/tmp/gputui-$U"'),
        no_dir_hint=(" (choose another --remote-dir)" if remote_dir else
                     ", nor $XDG_RUNTIME_DIR/gputui, nor /tmp/gputui-$U"), file=shlex.quote(probe_filename(sha)),
        replace="1" if replace else "", upload="1" if upload else "",
        encodings=" ".join(ENCODINGS), receiver=shlex.quote(RECEIVER), sha=shlex.quote(sha),
        args=" ".join(args), sizes=" ".join(str(n) for n in wire_sizes(size)),
        dircheck=shlex.quote(dir_check_source()),
    )


def dir_check_source():
    """The python the start script runs on a directory before it trusts it: create it 0700
    if missing (mkdir never follows a symlink), then remote_probe.paths.path_problem (the
    same source the probe itself uses), then narrow it to 0700 through an O_NOFOLLOW fd.
    Prints why not and exits 1."""
    import inspect

    from remote_probe import paths
    return "\n".join((inspect.getsource(paths._who), inspect.getsource(paths.path_problem),
                      DIR_CHECK_MAIN))


DIR_CHECK_MAIN = r'''
import os, sys
path = os.path.abspath(sys.argv[1])
missing, head = [], path
while not os.path.lexists(head):
    missing.append(head)
    head = os.path.dirname(head)
for d in reversed(missing):
    try:
        os.mkdir(d, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        print("cannot create %s: %s" % (d, exc.strerror or exc))
        sys.exit(1)
why = path_problem(path)
if why:
    print(why + "; refusing to use it")
    sys.exit(1)
fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0))
if os.fstat(fd).st_mode & 0o077:
    os.fchmod(fd, 0o700)
os.close(fd)
if not os.access(path, os.W_OK):
    print("%s is read-only" % path)
    sys.exit(1)
'''


def _dq(text):
    """Text safe inside a double-quoted sh string (for messages only)."""
    return re.sub(r'([\\"$`])', r"\\\1", text)


def probe_command(sha, mode="attach", simulate=None, remote_dir=None, candidates=PYTHON_CANDIDATES,
                  tag="0", upload=False, replace=False, explicit_python=None, size=0):
    """The full command line to run over SSH exec."""
    script = probe_script(sha, mode=mode, simulate=simulate, remote_dir=remote_dir,
                          candidates=candidates, tag=tag, upload=upload, replace=replace,
                          explicit_python=explicit_python, size=size)
    return paste.any_shell(script)


# -- reading the script's answers ------------------------------------------------
MARKER = re.compile(rb"GTUI:([0-9a-f]+):([A-Z]+)(?: ([^\r\n]*))?\r?\n")


def find_marker(buf, tag, start=0):
    """The next marker of this tag in buf -> (word, detail, end offset) or None.

    Anything before it (a banner, a prompt, the echo of what was typed) is skipped.
    """
    want = tag.encode() if isinstance(tag, str) else tag
    for m in MARKER.finditer(buf, start):
        if m.group(1) == want:
            detail = (m.group(3) or b"").decode("utf-8", "replace")
            return m.group(2).decode(), detail, m.end()
    return None


def parse_error(detail):
    """'98 Python 3.6.9 is too old' -> (98, 'Python 3.6.9 is too old')."""
    code, _, text = detail.partition(" ")
    try:
        return int(code), text
    except ValueError:
        return None, detail


IN_USE = re.compile(r"runs (\S+) \(gputui [^)]*\) for (\d+) other live session")


def daemon_in_use_message(last):
    """A daemon started with other settings serves another session: say, in the user's
    language, which settings and the flag that joins it (the probe's English reason, pasted
    into a translated sentence, was half-translated and never named --simulate)."""
    m = IN_USE.search(last or "")
    if not m:
        return _("Left the box's probe daemon running: %s") % (
            (last or "").replace("gputui probe: ", "") or _("another live session uses it"))
    backend, n = m.group(1), int(m.group(2))
    if backend.startswith("sim:"):
        scenario = backend[4:]
        return ngettext(
            "The box's probe daemon runs the simulator (scenario %s) for %d other live session, "
            "so it was left running. Add `--simulate %s` to use it (or `simulate = \"%s\"` for "
            "this host in the config), close the other session, or use another --remote-dir.",
            "The box's probe daemon runs the simulator (scenario %s) for %d other live sessions, "
            "so it was left running. Add `--simulate %s` to use it (or `simulate = \"%s\"` for "
            "this host in the config), close the other session, or use another --remote-dir.",
            n) % (scenario, n, scenario, scenario)
    return ngettext(
        "The box's probe daemon reads the real GPUs for %d other live session, so it was left "
        "running. Drop --simulate (and `simulate` in the config) to use it, close the other "
        "session, or use another --remote-dir.",
        "The box's probe daemon reads the real GPUs for %d other live sessions, so it was left "
        "running. Drop --simulate (and `simulate` in the config) to use it, close the other "
        "session, or use another --remote-dir.", n) % n


def explain_exit(code, stderr=""):
    """A one-line message for an exit status of the probe command."""
    detail = (stderr or "").strip().splitlines()
    last = detail[-1] if detail else ""
    if code == EXIT_NO_PYTHON:
        return (_("No python3 on the box (looked in %s): the probe needs Python %d.%d+. "
                  "If the box has one elsewhere, name it with `--remote-python PATH` or "
                  "`python = \"PATH\"` in the host's section of the config; otherwise install "
                  "python3 (e.g. `apt install python3`)") % ((LOOKED_IN,) + wire.MIN_PYTHON))
    if code == EXIT_PYTHON_TOO_OLD:
        return (_("The box's Python is too old (%s); the probe needs Python %d.%d+. Name a "
                  "newer one with `--remote-python PATH` or `python = \"PATH\"` in the host's "
                  "section of the config")
                % (last.replace("gputui: ", "").replace(" is too old", "") or "unknown",
                   *wire.MIN_PYTHON))
    if code == EXIT_PYTHON_NOT_FOUND:
        return (_("The python you named with --remote-python: %s. Give a python3 that exists "
                  "on the box (e.g. `which python3` there)") % last.replace("gputui: ", ""))
    if code == EXIT_NO_WRITABLE_DIR:
        return (_("No writable place for the probe on the box: %s")
                % last.replace("gputui: ", ""))
    if code == EXIT_UPLOAD_FAILED:
        return _("Could not deploy the probe: %s") % last.replace("gputui: ", "")
    if code == EXIT_USAGE:
        return _("The probe refused the request: %s") % (last.replace("gputui probe: ", "") or "bad arguments")
    if code == EXIT_PROBE_MISSING:
        return _("The probe is not deployed on the box")
    if code == EXIT_PROBE_CRASHED:
        return _("The probe crashed on the box: %s") % (last or _("no output"))
    if code == wire.EXIT_DAEMON_IN_USE:
        return daemon_in_use_message(last)
    if code == EXIT_DAEMON_UNREACHABLE:
        return _("The probe daemon on the box could not be reached: %s") % (last or _("no output"))
    if code == EXIT_COMMAND_NOT_FOUND:
        return _("The box could not run the probe command: %s") % (last or "command not found")
    return _("The probe exited with status %s%s") % (code, ": " + last if last else "")


# Exit codes after which waiting and reconnecting cannot help.
FATAL_EXITS = frozenset({EXIT_NO_PYTHON, EXIT_PYTHON_TOO_OLD, EXIT_PROBE_CRASHED,
                         EXIT_COMMAND_NOT_FOUND, EXIT_PYTHON_NOT_FOUND, EXIT_NO_WRITABLE_DIR,
                         EXIT_UPLOAD_FAILED, EXIT_USAGE})
