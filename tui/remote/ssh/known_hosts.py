"""Host keys: which known_hosts files a hop reads and writes, the unknown and changed key
failures, and recording a key the user accepted (docs/architecture.md, "Safety rules")."""

import base64
import hashlib
import hmac
import os

import asyncssh

from tui.core.text import paste
from tui.core.i18n import _
from tui.remote.ssh.errors import ConnectError

NO_FILE = ("none", "/dev/null")


def host_key_policy(strict, config_says_no=True):
    """StrictHostKeyChecking -> what happens to an unknown key: ask | accept | refuse."""
    return {"accept-new": "accept", "no": "accept" if config_says_no else "ask", "off": "accept",
            "yes": "refuse"}.get(strict, "ask")


def known_hosts_paths(res):
    """(files to read, file to write or None): `none` and /dev/null read nothing, write nowhere."""
    users = [p for p in res.user_known_hosts if p not in NO_FILE]
    read = users + [p for p in res.global_known_hosts if p not in NO_FILE]
    write = users[0] if users else None
    return read, write


def host_port(host, port):
    """host:port for messages; an IPv6 address keeps its brackets ([::1]:39585), or the
    port would read as part of the address."""
    if port in (None, 22):
        return host
    return "[%s]:%s" % (host, port) if ":" in host else "%s:%s" % (host, port)


def known_host_name(host, port):
    """How OpenSSH writes a host in known_hosts."""
    return host if port in (None, 22) else "[%s]:%s" % (host, port)


class UnknownHostKey(ConnectError):
    def __init__(self, host, port, key, known_hosts_file, label=None, persist=True,
                 memory=None, hashed=False):
        self.host, self.port, self.key = host, port, key
        self.hashed = hashed  # HashKnownHosts yes: write the name hashed, like ssh
        self.known_hosts_file = known_hosts_file
        self.persist, self._memory = persist, memory
        self.label = label or host_port(host, port)
        self.fingerprint = key.get_fingerprint("sha256")
        self.algorithm = key.get_algorithm()
        super().__init__(_("The authenticity of %s can't be established. %s key fingerprint "
                           "is %s") % (self.label, self.algorithm, self.fingerprint))


class ChangedHostKey(ConnectError):
    def __init__(self, host, port, key, known_hosts_file, label=None):
        self.host, self.port, self.key = host, port, key
        self.fingerprint = key.get_fingerprint("sha256")
        super().__init__(
            _("REFUSED: the host key of %s has CHANGED (now %s). Someone may be intercepting "
              "the connection, or the box was reinstalled. If you know why, remove the old key "
              "with `ssh-keygen -R %s -f %s` and connect again.")
            % (label or host_port(host, port), self.fingerprint, paste.quote(known_host_name(host, port)),
               paste.quote(known_hosts_file)))


def _key_line(name, key, hashed=False):
    if hashed:
        name = hashed_host_name(name)
    return "%s %s\n" % (name, " ".join(key.export_public_key("openssh").decode().split()[:2]))


def hashed_host_name(name, salt=None):
    """known_hosts `|1|salt|hmac` form, as ssh writes it under HashKnownHosts yes."""
    salt = salt if salt is not None else os.urandom(20)
    digest = hmac.new(salt, name.encode(), hashlib.sha1).digest()
    return "|1|%s|%s" % (base64.b64encode(salt).decode(), base64.b64encode(digest).decode())


def trust_host_key(exc: UnknownHostKey):
    """Record the key the user accepted: in their known_hosts, like `ssh` does on yes; with
    `UserKnownHostsFile none` or /dev/null, in memory for this run (no prompt loop)."""
    name = known_host_name(exc.host, exc.port)
    if exc._memory is not None:
        exc._memory.setdefault(name, []).append(exc.key)
    if not exc.persist:
        return
    path = exc.known_hosts_file
    os.makedirs(os.path.dirname(path) or ".", mode=0o700, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write(_key_line(name, exc.key, exc.hashed))


def _load_known(paths, memory):
    """All known_hosts lines we may check against, as one asyncssh object."""
    text = ["# gputui\n"]  # never empty: asyncssh reads ~/.ssh/known_hosts for an empty arg
    for path in paths:
        if not os.path.isfile(path):
            continue
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text.append(f.read().rstrip("\n") + "\n")
        except OSError as exc:
            raise ConnectError(_("Cannot read known_hosts %s: %s") % (path, exc.strerror or exc))
    for name, keys in (memory or {}).items():
        text.extend(_key_line(name, k) for k in keys)
    try:
        return asyncssh.import_known_hosts("".join(text))
    except (ValueError, asyncssh.Error) as exc:
        raise ConnectError(_("Cannot parse known_hosts (%s): %s") % (", ".join(paths), exc))
