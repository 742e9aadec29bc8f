"""How `ssh -G` is asked about a destination, and how its answer reads, without asyncssh; and
the head start (issue 38): `gputui status` runs that `ssh -G` and opens the TCP connection to
the box in a thread while the main one still imports asyncssh, so OpenSSH reading its config
and the box's sshd forking, greeting and the network's round trip overlap the ~100 ms of
imports instead of following them. tui.remote.ssh takes what the head start got, once, where it
is exactly what it would have done itself (the same `ssh -G` argv; the same host and port, no
jump host, no ProxyCommand); anything else, and every later connection, goes as before."""

import dataclasses
import os
import socket
import subprocess
import sys
import threading
from typing import Any, Dict, List, Optional, Tuple

from tui.core.destination import Destination


def user_home() -> str:
    """gputui's home: $HOME, like asyncssh and other Python tools (ssh itself uses passwd)."""
    return os.path.expanduser("~")


def passwd_home() -> str:
    """The home `ssh` uses (the passwd entry); $HOME where there is no passwd (Windows)."""
    if sys.platform == "win32":
        return user_home()
    try:
        import pwd  # POSIX only: imported where used, so Windows can import this module
        return pwd.getpwuid(os.getuid()).pw_dir
    except (ImportError, KeyError):
        return user_home()


def home_redirected() -> bool:
    """True when $HOME is not the passwd home (tests, sudo -E): ssh would read the other."""
    return os.path.realpath(user_home()) != os.path.realpath(passwd_home())


def config_args(ssh_config: Optional[str]) -> List[str]:
    """-F for `ssh -G`: the given file; or, with $HOME redirected, $HOME/.ssh/config."""
    if ssh_config:
        return ["-F", os.path.expanduser(ssh_config)]
    if home_redirected():
        path = os.path.join(user_home(), ".ssh", "config")
        return ["-F", path if os.path.exists(path) else "/dev/null"]
    return []


def ssh_g_argv(binary: str, dest: Destination) -> List[str]:
    """`ssh -G` for a destination (its `config` the -F file, if any): the config file first,
    then the user's own options, then the host after `--`."""
    words = dataclasses.replace(dest, config=None).ssh_args()  # -F comes from config_args
    return [binary, "-G", *config_args(dest.config), *words, "--", dest.host]


def parse_ssh_g(text: str) -> Dict[str, List[str]]:
    """`ssh -G` output -> {lowercase key: [values in order]} (repeated keys kept)."""
    out: Dict[str, List[str]] = {}
    for line in text.splitlines():
        key, _sep, value = line.strip().partition(" ")
        if key:
            out.setdefault(key.lower(), []).append(value.strip())
    return out


CONNECT_TIMEOUT = 15  # tui.remote.ssh.connect's, for a box whose config sets no ConnectTimeout


class HeadStart:
    """`ssh -G` (argv), then a TCP connection to the HostName and Port it prints, in a thread."""

    def __init__(self, argv: List[str]):
        self.argv = argv
        self.ssh_g: Any = None      # subprocess.CompletedProcess, or the OSError/TimeoutExpired
        self.addr: Optional[Tuple[str, int]] = None   # where the socket goes (None: not tried)
        self.sock: Optional[socket.socket] = None
        self.sock_error: Optional[OSError] = None
        self.ssh_g_ready: Optional[threading.Event] = threading.Event()
        self.sock_ready = threading.Event()
        self.thread = threading.Thread(target=self._run, name="gputui-head-start", daemon=True)

    def _run(self) -> None:
        try:
            self.ssh_g = subprocess.run(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as exc:
            self.ssh_g = exc
        ready = self.ssh_g_ready
        if ready is not None:
            ready.set()
        try:
            self.addr, timeout = direct_address(self.ssh_g)
            if self.addr is not None:
                self.sock = socket.create_connection(self.addr, timeout=timeout)
                self.sock.settimeout(None)
        except OSError as exc:
            self.sock_error = exc
        finally:
            self.sock_ready.set()


def direct_address(done: Any) -> Tuple[Optional[Tuple[str, int]], float]:
    """((HostName, Port), ConnectTimeout) from a successful `ssh -G`, or (None, 0) where the
    connection is not a plain TCP one from here (ProxyJump, ProxyCommand) or ssh refused."""
    if not isinstance(done, subprocess.CompletedProcess) or done.returncode != 0:
        return None, 0
    g = parse_ssh_g(done.stdout)
    if (g.get("proxyjump") or ["none"])[0] != "none" or (g.get("proxycommand") or ["none"])[0] != "none":
        return None, 0
    try:
        port = int((g.get("port") or ["22"])[0])
        text = (g.get("connecttimeout") or ["none"])[0]
        timeout = int(text) if text.isdigit() and int(text) > 0 else CONNECT_TIMEOUT
    except ValueError:
        return None, 0
    hostname = (g.get("hostname") or [""])[0]
    return ((hostname, port), timeout) if hostname else (None, 0)


_head: Optional[HeadStart] = None


def begin(dest: Destination, binary: Optional[str]) -> Optional[HeadStart]:
    """Start the head start for `dest` (its `config` the --ssh-config/-F file) with this `ssh`."""
    global _head
    discard()
    if not binary:
        return None
    _head = HeadStart(ssh_g_argv(binary, dest))
    _head.thread.start()
    return _head


def take_ssh_g(argv: List[str]) -> Any:
    """The head start's `ssh -G` result (CompletedProcess or the exception) when it ran exactly
    `argv`, waiting for it; else None. Once: a later resolve runs its own."""
    head = _head
    ready = head.ssh_g_ready if head is not None else None
    if head is None or ready is None or head.argv != argv:
        return None
    ready.wait()
    head.ssh_g_ready = None  # taken
    return head.ssh_g


def take_socket(hostname: str, port: int) -> Tuple[Optional[socket.socket], Optional[OSError]]:
    """(connected socket, None) or (None, why it failed) when the head start connected to
    exactly (hostname, port), waiting for it (blocking: call it from a thread); (None, None)
    otherwise. Once: a later connection opens its own."""
    global _head
    head = _head
    if head is None:
        return None, None
    if head.ssh_g_ready is not None:  # its ssh -G was not the one used: neither is its socket
        discard()
        return None, None
    head.sock_ready.wait()
    _head = None
    if head.addr != (hostname, port):
        if head.sock is not None:
            head.sock.close()
        return None, None
    return head.sock, head.sock_error


def discard() -> None:
    """Drop an untaken head start (its socket closed)."""
    global _head
    head, _head = _head, None
    if head is not None and head.sock_ready.is_set() and head.sock is not None:
        head.sock.close()
