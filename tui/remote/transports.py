"""How the probe gets started on a box: over an exec channel, or through a terminal.

Both transports run the same bootstrap script (``bootstrap.probe_script``) and follow
its marker lines through whatever noise the box prints, upload the probe when the
script asks for it (length-prefixed by the script, sha256-checked on the box), and then
speak the same NDJSON with ``probe attach``.

* ``exec``: ``/bin/sh -c SCRIPT`` on an exec channel. The normal case.
* ``pty``: for proxies that grant only an interactive shell on a PTY (RunPod's basic
  SSH: no exec, no SFTP). We type one short line into the shell that switches the
  terminal to raw mode, says READY and reads the script length-prefixed from stdin;
  from there on the bytes pass unchanged (no echo, no CR/LF translation).

Which one a box needs is detected from its refusal (``looks_pty_only``), not configured.
Files come back over SFTP where the box allows it, else through the probe channel
(``tui.remote.probe.files``, chunked; ``tui.core.transfer.download`` resumes and verifies the sha256).
"""

import asyncio
import base64
import dataclasses
import logging
import re
import time
from typing import List, Optional

import asyncssh

from remote_probe import wire
from tui.core.text import paste
from tui.core.i18n import N_, _
from tui.remote import bootstrap, ssh
from tui.remote.probe.client import (
    HELLO_TIMEOUT,
    IncompatibleProbe,
    ProbeClient,
    ProbeError,
    ProbeStartError,
)

log = logging.getLogger("gputui.transport")

EXEC, PTY = "exec", "pty"
LABELS = {EXEC: "exec", PTY: N_("terminal (PTY)")}  # the header translates it
MARKER_TIMEOUT = 60.0  # a conda-laden ~/.bashrc and a cold python can take a while
READY_TIMEOUT = 20.0
SETTLE_QUIET, SETTLE_LIMIT = 0.2, 3.0  # let a banner and the prompt pass before typing
TERM, TERM_SIZE = "xterm", (200, 50)
NOISE_KEEP = 4096


class StartFailed(ssh.ConnectError):
    """The probe could not be started; `fatal` when retrying cannot help."""

    def __init__(self, message, fatal=False, code=None):
        super().__init__(message)
        self.fatal, self.code = fatal, code


class PtyOnly(Exception):
    """The box refused an exec channel in a way that says: terminal sessions only."""


# What PTY-only proxies answer to an exec request (RunPod: "Error: Your SSH client
# doesn't support PTY"), in any wording that names the PTY as the missing part. A false
# positive costs little: an ordinary sshd serves the terminal transport as well.
PTY_REFUSAL = (
    rb"(doesn'?t|does not|do not|don'?t|not) (support|request(ed)?|have|allocate)[a-z ]{0,12}\b(a )?(pty|tty|terminal)\b"
    rb"|\b(pty|tty|terminal)\b[a-z ]{0,20}\b(required|is required|needed)\b"
    rb"|\brequires? (a |an )?(pty|tty|terminal)\b"
    rb"|interactive (shell|session|terminal)s? only|only interactive")


def looks_pty_only(exit_status, stdout, stderr):
    """Did an exec request end because the server wants a terminal? (table-tested)"""
    if exit_status == 0:
        return False
    text = (stdout or b"") + b"\n" + (stderr or b"")
    # compiled on first use (re caches it): a few ms of every start-up otherwise (issue 26)
    return bool(re.search(PTY_REFUSAL, text, re.IGNORECASE))


def printable(data, limit=300):
    """Box output as one plain line for a message: escapes and control codes dropped."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    text = re.sub(r"\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b.", "", text)
    text = " ".join(line.strip() for line in re.split(r"[\r\n]+", text) if line.strip())
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text[-limit:]


class StreamReader:
    """Bytes from an SSH channel with a buffer: marker search first, then readline()
    for the probe client, with nothing lost in between."""

    def __init__(self, raw):
        self.raw = raw
        self.buf = bytearray()
        self.noise = bytearray()  # the last bytes skipped while looking for markers
        self.eof = False
        self.words = []  # markers seen, in order: START proves the script ran

    async def _fill(self, timeout=None):
        if self.eof:
            return False
        data = await asyncio.wait_for(self.raw.read(1 << 16), timeout)
        if not data:
            self.eof = True
            return False
        self.buf += data
        return True

    def _drop(self, n):
        self.noise += self.buf[:n]
        del self.noise[:-NOISE_KEEP]
        del self.buf[:n]

    async def settle(self, quiet=SETTLE_QUIET, limit=SETTLE_LIMIT):
        """Wait for the box to say something (a banner, the prompt) and then stop talking
        for `quiet` s; at most `limit` s. Typed-ahead input usually survives, but some
        shells' startup files read or flush it."""
        loop = asyncio.get_running_loop()
        end = loop.time() + limit
        while loop.time() < end:
            wait = max(0.01, end - loop.time()) if not self.buf else min(quiet, max(0.01, end - loop.time()))
            try:
                if not await self._fill(wait):
                    return
            except asyncio.TimeoutError:
                if self.buf:
                    return

    async def marker(self, tag, timeout=None):
        """The next (word, detail) of this tag; None at end of stream."""
        loop = asyncio.get_running_loop()
        end = loop.time() + (MARKER_TIMEOUT if timeout is None else timeout)
        while True:
            found = bootstrap.find_marker(bytes(self.buf), tag)
            if found:
                word, detail, at = found
                self._drop(at)
                self.words.append(word)
                return word, detail
            # keep a partial marker at the end; everything before it is noise
            keep = max(0, len(self.buf) - 256)
            self._drop(keep)
            left = end - loop.time()
            if left <= 0:
                raise asyncio.TimeoutError()
            if not await self._fill(left):
                self._drop(len(self.buf))
                return None

    async def readline(self):
        start = 0
        while True:
            at = self.buf.find(b"\n", start)
            if at >= 0:
                line = bytes(self.buf[:at + 1])
                del self.buf[:at + 1]
                return line
            start = len(self.buf)
            if not await self._fill():
                line = bytes(self.buf)
                self.buf.clear()
                return line

    def noise_text(self):
        return printable(bytes(self.noise) + bytes(self.buf))


@dataclasses.dataclass
class Plan:
    """What to start: the probe build and how the user asked to run it."""

    data: bytes
    sha: str
    mode: str = "attach"
    simulate: Optional[str] = None
    remote_dir: Optional[str] = None
    remote_python: Optional[str] = None
    replace: bool = False  # upload even if the file is there (its probe spoke another protocol)

    def script(self, tag):
        return bootstrap.probe_script(
            self.sha, mode=self.mode, simulate=self.simulate, remote_dir=self.remote_dir,
            tag=tag, upload=True, replace=self.replace, explicit_python=self.remote_python,
            size=len(self.data))


@dataclasses.dataclass
class Started:
    transport: str
    process: object
    client: ProbeClient
    notes: List[str]
    deploy_seconds: Optional[float]  # None: the probe was already there
    remote_dir: str

    @property
    def uploaded(self):
        return self.deploy_seconds is not None


class EndedEarly(Exception):
    """The channel closed before the script said RUN."""


async def send(writer, data):
    """Write to the box; a channel that already closed is EndedEarly, not a crash."""
    try:
        writer.write(data)
        await writer.drain()
    except (BrokenPipeError, ConnectionError, asyncssh.Error) as exc:
        raise EndedEarly() from exc


async def follow_script(reader, writer, tag, data, on_deploying=None):
    """Answer the bootstrap's markers until RUN -> (notes, deploy seconds or None, remote dir)."""
    notes, uploaded, t_need, took = [], False, None, None
    while True:
        got = await reader.marker(tag)
        if got is None:
            raise EndedEarly()
        word, detail = got
        if word == "START":
            pass
        elif word == "NOTE":
            notes.append(printable(detail))
        elif word == "NEED":
            if on_deploying:
                on_deploying()
            payload = base64.b64encode(data) if detail == "b64" else data
            t_need = t_need or time.perf_counter()
            if uploaded:
                log.warning("the probe arrived corrupted; sending it again as %s", detail)
            await send(writer, payload)
            uploaded = True
        elif word == "ERR":
            code, text = bootstrap.parse_error(detail)
            message = bootstrap.explain_exit(code, "gputui: " + printable(text))
            raise StartFailed(message, fatal=code in bootstrap.FATAL_EXITS, code=code)
        elif word == "GOT":
            took = time.perf_counter() - t_need if t_need else None
        elif word == "RUN":
            return notes, took, printable(detail)


def stalled_message(started, printed="", stderr=""):
    """Why a start script that went quiet past MARKER_TIMEOUT did: before START, the login
    shell never ran our command (its startup files wait); after it, the script itself hung."""
    shown = "; ".join(x for x in (printed, stderr) if x)
    if not started:
        text = _("The box's login shell did not run gputui's start command within %.0f s: "
                 "something its startup files run (~/.bashrc, ~/.profile: conda or pyenv init, "
                 "a network mount, a stale lock) is waiting. `ssh HOST true` will hang as "
                 "long; fix that file, or end it early for non-interactive shells with "
                 "`case $- in *i*) ;; *) return;; esac` at its top") % MARKER_TIMEOUT
    else:
        text = _("The probe's start script did not answer within %.0f s") % MARKER_TIMEOUT
    return text + ((_("; the box printed: %s") % shown) if shown else "")


async def _stderr_so_far(process, wait=0.3):
    """What the box wrote to stderr by now (a hung login often says why), without waiting."""
    try:
        data = await asyncio.wait_for(process.stderr.read(4096), wait)
    except (asyncio.TimeoutError, asyncssh.Error, OSError):
        return b""
    return data.encode() if isinstance(data, str) else (data or b"")


async def _finish(process, timeout=5):
    """(exit status, stderr bytes) of a process that is ending."""
    stderr = b""
    try:
        done = await asyncio.wait_for(process.wait(), timeout)
        stderr = done.stderr or b""
    except asyncio.TimeoutError:
        process.close()
    except (asyncssh.Error, OSError):
        pass
    if isinstance(stderr, str):
        stderr = stderr.encode()
    return process.exit_status, stderr


async def _attach(transport, process, reader, plan, on_push, notes, took, rdir):
    client = ProbeClient(reader, process.stdin, on_push=on_push)
    try:
        await client.start()
    except ProbeStartError as exc:
        process.close()
        code = exc.exit_code
        raise StartFailed(bootstrap.explain_exit(code, "gputui probe: %s" % printable(str(exc))),
                          fatal=code in bootstrap.FATAL_EXITS, code=code)
    except IncompatibleProbe:
        # A daemon of another protocol answered: ask it to stop (every version honours
        # "shutdown"), so the redeployed probe starts a fresh one instead of meeting it again.
        try:
            await send(process.stdin, wire.encode({"type": wire.SHUTDOWN, "id": "redeploy"}))
            await asyncio.wait_for(process.wait(), 5)
        except (EndedEarly, asyncio.TimeoutError, asyncssh.Error, OSError):
            pass
        process.close()
        raise  # the session redeploys
    except (ProbeError, asyncio.TimeoutError) as exc:
        status, stderr = await _finish(process)
        last = printable(stderr) or reader.noise_text()
        if status is not None:
            raise StartFailed(bootstrap.explain_exit(status, last),
                              fatal=status in bootstrap.FATAL_EXITS, code=status)
        raise StartFailed(_("The probe did not answer: %s") % (
            str(exc) or _("no hello within %.0f s%s") % (
                HELLO_TIMEOUT, (_(" (the box printed: %s)") % last) if last else "")))
    return Started(transport, process, client, notes, took, rdir)


async def start_exec(conn, plan, on_push=None, on_deploying=None):
    """Bootstrap, deploy if needed, attach: all on one exec channel."""
    tag = bootstrap.new_tag()
    command = paste.any_shell(plan.script(tag))  # csh, tcsh and fish login shells too
    try:
        process = await conn.create_process(command, encoding=None)
    except asyncssh.ChannelOpenError as exc:
        raise PtyOnly("the box refused to run a command (%s)" % (exc.reason or exc))
    reader = StreamReader(process.stdout)
    try:
        notes, took, rdir = await follow_script(reader, process.stdin, tag, plan.data, on_deploying)
    except EndedEarly:
        status, stderr = await _finish(process)
        said = bytes(reader.noise)
        if looks_pty_only(status, said, stderr):
            raise PtyOnly(printable(said + b"\n" + stderr, 200))
        if "START" not in reader.words and status != 0:
            # The box ran something else than our command (a ForceCommand, a proxy that
            # answers exec with an error): its terminal may still work, so try that.
            raise PtyOnly("the box did not run gputui's start command: exit status %s%s" % (
                status, (", " + printable(said + b"\n" + stderr, 200))
                if (said or stderr).strip() else ""))
        last = printable(stderr) or reader.noise_text()
        raise StartFailed(bootstrap.explain_exit(status, last),
                          fatal=status in bootstrap.FATAL_EXITS, code=status)
    except asyncio.TimeoutError:
        said = await _stderr_so_far(process)
        process.close()
        raise StartFailed(stalled_message("START" in reader.words, reader.noise_text(),
                                          printable(said, 300)))
    except StartFailed:
        process.close()
        raise
    return await _attach(EXEC, process, reader, plan, on_push, notes, took, rdir)


class DirectUnavailable(Exception):
    """The daemon's socket could not be used this time (gone, another config): start it
    the usual way. `channel_refused`: sshd would not open the channel; OpenSSH says the
    same "open failed" for a missing socket and for `AllowStreamLocalForwarding no`, so
    only the daemon found running there afterwards tells the two apart."""

    def __init__(self, reason, channel_refused=False):
        super().__init__(reason)
        self.channel_refused = channel_refused


class DirectRefused(DirectUnavailable):
    """The box does not answer socket channels at all: remember, don't try again."""


DIRECT_TIMEOUT = 5.0


class DirectChannel:
    """What a Started holds as its process when the probe came over a socket channel:
    nothing runs on the box for this connection, so there is nothing to wait for."""

    def __init__(self, writer):
        self.writer = writer
        self.exit_status = None

    def close(self):
        self.writer.close()


DIRECT_HELLO_LINE = 1 << 20  # a hello is a few hundred bytes
DIRECT_LINE = 64 << 20  # far above any snapshot or file chunk (512 KB as base64)


class _LineCapped:
    """The socket's reader, ended when a line grows past `limit` bytes: whatever listens at
    a remembered path may not be the daemon, and a peer that never sends a newline would
    otherwise fill the laptop's memory (750 MB in the 5 s a hello may take)."""

    def __init__(self, raw, limit):
        self.raw, self.limit, self.run = raw, limit, 0

    async def read(self, n):
        data = await self.raw.read(n)
        at = data.rfind(b"\n")
        self.run = len(data) - at - 1 if at >= 0 else self.run + len(data)
        return b"" if self.run > self.limit else data  # as if the peer had closed


async def start_direct(conn, path, want_config, on_push=None, remote_dir="", notes=(), secret=None):
    """Open the running daemon's socket over the SSH connection (direct-streamlocal):
    no command, no bridge on the box. DirectUnavailable/DirectRefused when it cannot be.

    Nobody on the box checks who listens at `path` (another user may have made its /tmp
    directory again), so the daemon must prove it holds `secret`, learnt over the command
    path: a nonce goes out with the channel's first bytes (no extra round trip) and its
    HMAC must come back before the daemon is used (wire/challenge.py)."""
    try:
        reader, writer = await asyncio.wait_for(conn.open_unix_connection(path), DIRECT_TIMEOUT)
    except asyncssh.ChannelOpenError as exc:
        if exc.code == asyncssh.OPEN_ADMINISTRATIVELY_PROHIBITED:
            raise DirectRefused(exc.reason or "socket forwarding is off")
        raise DirectUnavailable(exc.reason or str(exc), channel_refused=True)
    except asyncio.TimeoutError:
        raise DirectRefused("no answer to a socket channel within %.0f s" % DIRECT_TIMEOUT)
    except (asyncssh.Error, OSError) as exc:
        raise DirectUnavailable(str(exc) or exc.__class__.__name__)
    capped = _LineCapped(reader, DIRECT_HELLO_LINE)
    client = ProbeClient(StreamReader(capped), writer, on_push=on_push)
    nonce = wire.challenge.new_nonce()
    proved = client.send_first(wire.PROVE, wire.challenge.PROVE_ID, nonce=nonce)
    try:
        # No shell prints a banner here: a first line that is not a hello is another
        # program, given up on at once (not after DIRECT_TIMEOUT of logged junk lines).
        await asyncio.wait_for(client.start(noise=False), DIRECT_TIMEOUT)
    except (ProbeError, asyncio.TimeoutError) as exc:
        proved.cancel()
        writer.close()
        raise DirectUnavailable("no gputui daemon answers at %s (%s)" % (
            path, str(exc) or "no hello within %.0f s" % DIRECT_TIMEOUT))
    capped.limit = DIRECT_LINE
    if client.hello.get("config") != want_config:
        # Another version or backend: the exec path replaces it (or says who uses it).
        proved.cancel()
        await client.close()
        raise DirectUnavailable("the daemon there runs %r" % (client.hello.get("config"),))
    try:
        answer = await asyncio.wait_for(proved, DIRECT_TIMEOUT)
    except (ProbeError, asyncio.TimeoutError):
        answer = {}
    if not wire.challenge.proof_ok(secret, nonce, answer.get("proof")):
        await client.close()
        writer.close()
        log.warning("the daemon at %s did not prove it is the one gputui started (%s): not "
                    "using it; starting the probe through a command instead", path,
                    "a wrong answer" if answer.get("proof") else "no answer")
        raise DirectUnavailable("the daemon at %s did not prove who it is" % path)
    return Started(EXEC, DirectChannel(writer), client, list(notes), None, remote_dir)


def stage0(tag):
    """The one line typed into the login shell (bash, zsh, fish, sh: one single-quoted
    word): raw terminal, READY, then read the script by length.

    A login whose ~/.bashrc starts or attaches tmux (Vast's default) puts this line in a
    tmux pane, where the probe's bytes would be redrawn by tmux, not passed on. There
    ($TMUX set) the same steps go into a temp file, and `tmux detach-client -E` makes our
    own client (the newest one: the user may be attached elsewhere too) run them instead of
    tmux, on the SSH terminal itself; the pane gets a fresh shell, nothing of gputui in it.
    """
    body = ('stty raw -echo -iexten 2>/dev/null; echo; echo GTUI:\"%s\":READY; '
            'IFS= read -r n; eval \"$(dd bs=1 count=\"$n\" 2>/dev/null)\"' % tag)
    in_tmux = ('if [ -n "$TMUX" ] && f=$(mktemp 2>/dev/null); then '
               'printf "%%s\\n" "rm -f $f" "stty raw -echo -iexten 2>/dev/null" "echo" '
               '"echo GTUI:\\\"%s\\\":READY" "IFS= read -r n" '
               '"eval \\\"\\$(dd bs=1 count=\\\"\\$n\\\" 2>/dev/null)\\\"" >"$f"; '
               'c=$(tmux list-clients -F "#{client_created} #{client_tty}" | sort -n | tail -n 1); '
               'tmux detach-client -t "${c#* }" -E "/bin/sh $f"; exec "${SHELL:-/bin/sh}"; fi; ' % tag)
    return " exec /bin/sh -c '%s%s'\r" % (in_tmux, body)


PTY_HINT = ("this box allows only an interactive terminal (PTY) session; gputui starts its probe "
            "through that terminal")


async def start_pty(conn, plan, on_push=None, on_deploying=None, why=""):
    """Bootstrap, deploy and attach through an interactive shell on a PTY."""
    tag = bootstrap.new_tag()
    try:
        process = await conn.create_process(term_type=TERM, term_size=TERM_SIZE,
                                            request_pty="force", encoding=None)
    except asyncssh.ChannelOpenError as exc:
        raise StartFailed("The box refused both a command and an interactive terminal (%s%s). "
                          "Check that this SSH login may open a shell." %
                          (exc.reason or exc, "; " + why if why else ""), fatal=True)
    reader = StreamReader(process.stdout)
    t0 = time.monotonic()  # the message says how long it really waited (settle included)
    try:
        await reader.settle()
        await send(process.stdin, stage0(tag).encode())
        got = await reader.marker(tag, READY_TIMEOUT)
        if got is None or got[0] != "READY":
            raise EndedEarly()
        script = plan.script(tag).encode()
        await send(process.stdin, b"%d\n" % len(script) + script)
        notes, took, rdir = await follow_script(reader, process.stdin, tag, plan.data, on_deploying)
    except (EndedEarly, asyncio.TimeoutError) as exc:
        process.close()
        what = ("closed the session" if isinstance(exc, EndedEarly)
                else "did not answer within %.0f s" % (time.monotonic() - t0))
        said = reader.noise_text()
        raise StartFailed("%s, but the shell there %s%s. Try `ssh` to it by hand: if you get a "
                          "shell prompt, report this with `gputui --log FILE`."
                          % (PTY_HINT[0].upper() + PTY_HINT[1:], what,
                             (" (it printed: %s)" % said) if said else ""), fatal=True)
    except StartFailed:
        process.close()
        raise
    return await _attach(PTY, process, reader, plan, on_push, notes, took, rdir)


async def start(conn, transport, plan, on_push=None, on_deploying=None, why=""):
    if transport == PTY:
        return await start_pty(conn, plan, on_push, on_deploying, why)
    return await start_exec(conn, plan, on_push, on_deploying)
