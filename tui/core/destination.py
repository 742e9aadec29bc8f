"""What the user typed to name a box -> a Destination (no ssh, no network).

Accepted, as a provider console or `ssh` shows them:
  mybox                          an alias from ~/.ssh/config (or a host name)
  user@host  user@host:port  host:port  ssh://user@host[:port]  [::1]:2222
  -p PORT user@host              ssh's own options before or after the destination
  ssh -p 38211 root@host         a pasted login command, as many argv words or one quoted word
with -p, -l, -i, -J, -o Key=Value and -F. Anything else is a DestinationError that says
what to remove, never a silent guess.
"""

import dataclasses
import re
import shlex
from typing import Any, Dict, List, Optional, Protocol, Sequence, Tuple, Union

from tui.core.i18n import _

# ssh options gputui understands; each takes one value.
VALUE_OPTIONS = {"-p": "port", "-l": "user", "-i": "identity", "-J": "jump", "-o": "option",
                 "-F": "config"}
# What the others are, so the error can say why it is refused.
_REFUSED = {
    "-L": "port forwarding", "-R": "port forwarding", "-D": "port forwarding",
    "-W": "stdio forwarding", "-N": "no remote command", "-f": "backgrounding",
    "-t": "terminal allocation", "-T": "terminal allocation", "-A": "agent forwarding",
    "-X": "X11 forwarding", "-Y": "X11 forwarding", "-v": "verbose output",
}
_HOST_RE = re.compile(r"^[A-Za-z0-9_.%*?!\-]+$|^[0-9A-Fa-f:.]+(%[A-Za-z0-9]+)?$")
_OPTION_RE = re.compile(r"^([A-Za-z][A-Za-z0-9]*)\s*(?:=|\s)\s*(.+)$")


class DestinationError(ValueError):
    """The words do not name one box; the message says what to change."""


@dataclasses.dataclass
class Destination:
    host: str                          # alias or host name, as typed (ssh's "original host")
    user: Optional[str] = None
    port: Optional[int] = None
    identity_files: Tuple[str, ...] = ()
    jump: Optional[str] = None
    options: Tuple[Tuple[str, str], ...] = ()   # -o Key=Value, in order
    config: Optional[str] = None       # -F FILE

    def key(self) -> str:
        """The config/ledger name of this box: the alias, or user@host:port.

        The same box typed two ways (`ssh -p 38211 root@h`, `root@h:38211`) gets one key.
        """
        if self.user is None and self.port is None:
            return self.host
        host = "[%s]" % self.host if ":" in self.host else self.host
        text = host if self.user is None else "%s@%s" % (self.user, host)
        return text if self.port in (None, 22) else "%s:%d" % (text, self.port)

    def ssh_args(self) -> List[str]:
        """These settings as `ssh` command-line options (before the destination)."""
        argv: List[str] = []
        if self.config:
            argv += ["-F", self.config]
        if self.port is not None:
            argv += ["-p", str(self.port)]
        if self.user is not None:
            argv += ["-l", self.user]
        for path in self.identity_files:
            argv += ["-i", path]
        if self.jump:
            argv += ["-J", self.jump]
        for k, v in self.options:
            argv += ["-o", "%s=%s" % (k, v)]
        return argv


class SshTarget(Protocol):
    """What a terminal hand-off needs of a box (tui.remote.ssh.Target has it): core names
    the shape without importing the remote layer."""

    host: str

    def ssh_args(self) -> List[str]: ...


def parse_port(text: str, what: str = "port") -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise DestinationError(_("%s %r is not a port number (1-65535)") % (what, text))
    return int(text)


def split_host(text: str) -> Tuple[Optional[str], str, Optional[int]]:
    """`[user@]host[:port]` or `ssh://...` -> (user, host, port); port None when absent."""
    if text.startswith("ssh://"):
        rest = text[len("ssh://"):].rstrip("/")
        if "/" in rest:
            raise DestinationError(_("an ssh:// address has no path: %r") % text)
    else:
        rest = text
    user, at, hostport = rest.rpartition("@")
    if at and not user:
        raise DestinationError(_("%r has an empty user name before '@'") % text)
    port: Optional[int] = None
    if hostport.startswith("["):  # [v6]:port or [host]:port
        host, close, tail = hostport[1:].partition("]")
        if not close:
            raise DestinationError(_("%r has an unclosed '['") % text)
        if tail:
            if not tail.startswith(":"):
                raise DestinationError(_("unexpected %r after ']' in %r") % (tail, text))
            port = parse_port(tail[1:])
    elif hostport.count(":") == 1:  # host:port; more colons is a bare IPv6 address
        host, _colon, p = hostport.partition(":")
        port = parse_port(p)
    else:
        host = hostport
    if not host:
        raise DestinationError(_("no host in %r") % text)
    if host.startswith("-"):  # would read as an ssh option
        raise DestinationError(_("%r is not a host name") % host)
    if not _HOST_RE.match(host):
        raise DestinationError(_("%r is not a host name or ssh_config alias") % host)
    return user or None, host, port


def _option_pair(text: str) -> Tuple[str, str]:
    m = _OPTION_RE.match(text.strip())
    if not m:
        raise DestinationError(_("-o wants Key=Value (like -o Port=2222), not %r") % text)
    return m.group(1), m.group(2).strip()


def _words(argv: Sequence[str]) -> List[str]:
    words = list(argv)
    if len(words) == 1 and any(c.isspace() for c in words[0].strip()):
        try:
            words = shlex.split(words[0])  # the login command pasted as one quoted word
        except ValueError as exc:
            raise DestinationError(_("cannot split %r: %s") % (argv[0], exc))
    if words and (words[0] == "ssh" or words[0].endswith("/ssh")):
        words = words[1:]
    return words


def parse_destination(argv: Union[str, Sequence[str]]) -> Destination:
    """Words the user typed (a string or argv list) -> Destination, or DestinationError."""
    if isinstance(argv, str):
        argv = [argv]
    words = _words(argv)
    if not words:
        raise DestinationError(_("no box given: name an ssh_config alias, user@host[:port], "
                                 "or paste the provider's `ssh -p PORT user@host` command"))
    dest_word: Optional[str] = None
    values: Dict[str, Any] = {"port": None, "user": None, "jump": None, "config": None}
    identities: List[str] = []
    options: List[Tuple[str, str]] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w.startswith("-") and len(w) > 1:
            flag, attached = w[:2], w[2:]
            if flag not in VALUE_OPTIONS:
                why = _REFUSED.get(flag)
                raise DestinationError(
                    _("ssh option %s%s is not used by gputui; remove it (gputui reads -p -l -i -J "
                      "-o -F)") % (w, " (%s)" % why if why else ""))
            if attached:
                value = attached
            elif i + 1 < len(words):
                i += 1
                value = words[i]
            else:
                raise DestinationError(_("ssh option %s needs a value") % flag)
            kind = VALUE_OPTIONS[flag]
            if kind == "identity":
                identities.append(value)
            elif kind == "option":
                options.append(_option_pair(value))
            elif kind == "port":
                values["port"] = parse_port(value, "-p")
            else:
                values[kind] = value
        elif dest_word is None:
            dest_word = w
        else:
            raise DestinationError(
                _("%r after the destination %r: gputui runs its own remote command, so a command "
                  "for the box cannot be given here") % (w, dest_word))
        i += 1
    if dest_word is None:
        raise DestinationError(_("no destination among %r (want alias, user@host or host:port)")
                               % " ".join(words))
    user, host, port = split_host(dest_word)
    # -o User / -o Port name the same box as -l / -p, so they count for its key too
    for k, v in options:
        if k.lower() == "user" and values["user"] is None:
            values["user"] = v
        elif k.lower() == "port" and values["port"] is None:
            values["port"] = parse_port(v, "-o Port")
    # Like ssh: -l and -p win over user@ and :port in the destination.
    return Destination(host=host, user=values["user"] or user,
                       port=values["port"] if values["port"] is not None else port,
                       identity_files=tuple(identities), jump=values["jump"],
                       options=tuple((k, v) for k, v in options
                                     if k.lower() not in ("user", "port")),
                       config=values["config"])
