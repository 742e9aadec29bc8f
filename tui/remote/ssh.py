"""SSH connections to the box: ~/.ssh/config, agent, known_hosts, keepalives.

asyncssh verifies host keys against known_hosts but has no trust-on-first-use, so we
build it (DESIGN.md safety rules): an unknown key fails the connection with
``UnknownHostKey`` carrying the fingerprint; the caller asks the user and, on an
explicit yes, ``trust_host_key`` writes it to known_hosts. A key that differs from a
known one raises ``ChangedHostKey`` and is never offered for trust.
"""

import asyncio
import dataclasses
import os
import socket
from typing import List, Optional

import asyncssh

KEEPALIVE_INTERVAL = 10  # s; with 2 missed replies a dead link is noticed in <= 30 s
KEEPALIVE_COUNT_MAX = 2
CONNECT_TIMEOUT = 15
# AES-GCM first: OpenSSL's AES-NI path through `cryptography` is several times faster than
# asyncssh's ChaCha20-Poly1305 in Python, which decides download speed. All are secure.
ENCRYPTION_ALGS = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com",
                   "chacha20-poly1305@openssh.com", "aes256-ctr", "aes192-ctr", "aes128-ctr")


@dataclasses.dataclass
class Target:
    """Where to connect: an ``ssh`` destination, optionally with a config file."""

    host: str
    ssh_config: Optional[str] = None
    port: Optional[int] = None
    username: Optional[str] = None
    client_keys: Optional[List[str]] = None

    @classmethod
    def parse(cls, dest, ssh_config=None):
        """``[user@]host[:port]`` like ssh accepts (aliases resolve through ssh_config)."""
        user, _, rest = dest.rpartition("@")
        host, port = rest, None
        if rest.count(":") == 1:
            host, _, p = rest.partition(":")
            port = int(p) if p.isdigit() else None
        return cls(host=host, ssh_config=ssh_config, port=port, username=user or None)

    def options(self, **extra):
        kwargs = dict(host=self.host, keepalive_interval=KEEPALIVE_INTERVAL,
                      keepalive_count_max=KEEPALIVE_COUNT_MAX, connect_timeout=CONNECT_TIMEOUT,
                      encryption_algs=ENCRYPTION_ALGS)
        if self.ssh_config:
            kwargs["config"] = [self.ssh_config]
        if self.port:
            kwargs["port"] = self.port
        if self.username:
            kwargs["username"] = self.username
        if self.client_keys is not None:
            kwargs["client_keys"] = self.client_keys
        kwargs.update(extra)
        return asyncssh.SSHClientConnectionOptions(**kwargs)

    def describe(self):
        return self.host if self.port is None else "%s:%s" % (self.host, self.port)


class ConnectError(Exception):
    """A connection failure with a one-line explanation for the user."""


class UnknownHostKey(ConnectError):
    def __init__(self, host, port, key, known_hosts_file):
        self.host, self.port, self.key = host, port, key
        self.known_hosts_file = known_hosts_file
        self.fingerprint = key.get_fingerprint("sha256")
        self.algorithm = key.get_algorithm()
        super().__init__("The authenticity of host %s can't be established. %s key fingerprint "
                         "is %s" % (host_port(host, port), self.algorithm, self.fingerprint))


class ChangedHostKey(ConnectError):
    def __init__(self, host, port, key, known_hosts_file):
        self.host, self.port, self.key = host, port, key
        self.fingerprint = key.get_fingerprint("sha256")
        super().__init__(
            "REFUSED: the host key of %s has CHANGED (now %s). Someone may be intercepting "
            "the connection, or the box was reinstalled. If you know why, remove the old key "
            "with `ssh-keygen -R %s -f %s` and connect again."
            % (host_port(host, port), self.fingerprint, known_host_name(host, port),
               known_hosts_file))


def host_port(host, port):
    return host if port in (None, 22) else "%s:%s" % (host, port)


def known_host_name(host, port):
    """How OpenSSH writes a host in known_hosts."""
    return host if port in (None, 22) else "[%s]:%s" % (host, port)


class _Client(asyncssh.SSHClient):
    """Records the key an unknown host offered so we can show its fingerprint."""

    def __init__(self):
        self.offered = None
        self.lost = None

    def validate_host_public_key(self, host, addr, port, key):
        self.offered = (host, addr, port, key)
        return False

    def connection_lost(self, exc):
        self.lost = exc


def known_hosts_files(options):
    files = options.known_hosts
    if isinstance(files, str):
        files = [files]
    if not files:
        files = [os.path.expanduser("~/.ssh/known_hosts")]
    return [os.path.expanduser(f) for f in files if isinstance(f, str)]


def trust_host_key(exc: UnknownHostKey):
    """Append the key the user accepted to their known_hosts (like `ssh` does on yes)."""
    path = exc.known_hosts_file
    os.makedirs(os.path.dirname(path) or ".", mode=0o700, exist_ok=True)
    key_text = " ".join(exc.key.export_public_key("openssh").decode().split()[:2])
    line = "%s %s\n" % (known_host_name(exc.host, exc.port), key_text)
    with open(path, "a", encoding="utf-8") as f:
        f.write(line)


def describe_error(exc, where):
    """One clear line for any connection failure."""
    if isinstance(exc, ConnectError):
        return str(exc)
    if isinstance(exc, socket.gaierror):
        return "Cannot resolve host %s: %s" % (where, exc.strerror or exc)
    if isinstance(exc, ConnectionRefusedError):
        return "Connection refused by %s: is sshd running and is the port right?" % where
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return "Timed out connecting to %s: the box is down or a firewall drops SSH" % where
    if isinstance(exc, asyncssh.PermissionDenied):
        return ("Authentication failed for %s: no key was accepted (check ssh-agent, "
                "IdentityFile in ~/.ssh/config, and the box's authorized_keys)" % where)
    if isinstance(exc, asyncssh.HostKeyNotVerifiable):
        return "Host key of %s not verifiable: %s" % (where, exc.reason)
    if isinstance(exc, asyncssh.DisconnectError):
        return "%s closed the connection: %s" % (where, exc.reason or exc)
    if isinstance(exc, OSError):
        return "Cannot connect to %s: %s" % (where, exc.strerror or exc)
    if isinstance(exc, asyncssh.Error):
        return "SSH error with %s: %s" % (where, exc.reason or exc)
    return "Cannot connect to %s: %s" % (where, exc)


async def connect(target: Target):
    """Open an SSH connection; raise ConnectError (or a subclass) with a clear message."""
    try:
        options = target.options()
    except (OSError, ValueError, asyncssh.Error) as exc:  # unreadable config, bad key file
        raise ConnectError("Cannot use the SSH settings for %s: %s" % (target.host, exc))
    where = host_port(options.host, options.port)
    client = _Client()
    try:
        # config= again: asyncssh opens ProxyJump hops with the call's config, not the options'
        conn, _ = await asyncssh.create_connection(
            lambda: client, options=options,
            config=[target.ssh_config] if target.ssh_config else ())
        return conn
    except asyncssh.HostKeyNotVerifiable as exc:
        if client.offered is None:
            raise ConnectError(describe_error(exc, where))
        host, addr, port, key = client.offered
        files = known_hosts_files(options)
        known = []
        for path in files:
            if os.path.exists(path):
                try:
                    known.extend(asyncssh.match_known_hosts(path, host, addr, port)[0])
                except (OSError, ValueError) as read_exc:
                    raise ConnectError("Cannot read known_hosts %s: %s" % (path, read_exc))
        if known:
            raise ChangedHostKey(host, port, key, files[0])
        raise UnknownHostKey(host, port, key, files[0])
    except Exception as exc:  # everything else becomes one line for the UI
        raise ConnectError(describe_error(exc, where)) from exc
