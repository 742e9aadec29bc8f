"""What to connect to: an ``ssh`` destination as the user typed it."""

import dataclasses
from typing import List, Optional, Tuple

import asyncssh

from tui.core.destination import Destination, parse_destination
from tui.remote.ssh.resolve import resolve


@dataclasses.dataclass
class Target:
    """Where to connect: an ``ssh`` destination, optionally with a config file."""

    host: str                                   # alias or host name as typed
    ssh_config: Optional[str] = None            # --ssh-config / -F
    port: Optional[int] = None
    username: Optional[str] = None
    client_keys: Optional[List[str]] = None     # -i files, in order
    jump: Optional[str] = None                  # -J
    ssh_options: Tuple[Tuple[str, str], ...] = ()  # -o Key=Value
    key: Optional[str] = None                   # config/ledger name (alias or user@host:port)

    @classmethod
    def parse(cls, dest, ssh_config=None):
        """What the user typed (string or argv words) -> Target; DestinationError if bad."""
        return cls.from_destination(parse_destination(dest), ssh_config)

    @classmethod
    def from_destination(cls, d: Destination, ssh_config=None):
        return cls(host=d.host, ssh_config=ssh_config or d.config, port=d.port,
                   username=d.user, client_keys=list(d.identity_files) or None, jump=d.jump,
                   ssh_options=tuple(d.options), key=d.key())

    def destination(self):
        return Destination(host=self.host, user=self.username, port=self.port,
                           identity_files=tuple(self.client_keys or ()), jump=self.jump,
                           options=tuple(self.ssh_options), config=self.ssh_config)

    def ssh_args(self):
        """These settings as `ssh` options, for `ssh -G` and the tmux hand-off."""
        return self.destination().ssh_args()

    def options(self, **extra):
        """asyncssh options for where the TCP connection goes (used by the port watch)."""
        res = resolve(self)
        kwargs = dict(host=res.hostname, port=res.port, username=res.user, config=[],
                      known_hosts=None, client_keys=None, agent_path=None)
        if res.proxy_jump:
            kwargs["tunnel"] = ",".join(res.proxy_jump)
        if res.proxy_command:
            kwargs["proxy_command"] = res.proxy_command
        kwargs.update(extra)
        return asyncssh.SSHClientConnectionOptions(**kwargs)

    def describe(self):
        return self.key or (self.host if self.port is None else "%s:%s" % (self.host, self.port))
