"""What to connect to: an ``ssh`` destination as the user typed it."""

import dataclasses
from typing import List, Optional, Tuple

import asyncssh

from tui.core.destination import Destination, parse_destination
from tui.remote.ssh.errors import ConnectError
from tui.remote.ssh.resolve import config_args, home_redirected, resolve


def _ssh_word(path):
    """A path as one word of an ssh option value (ssh splits values at blanks, honours "";
    it expands %-tokens in IdentityFile/UserKnownHostsFile again, so a literal '%' is '%%')."""
    path = path.replace("%", "%%")
    return '"%s"' % path if any(c.isspace() for c in path) else path


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
        """These settings as `ssh` options for the terminal hand-offs (tmux attach, nvitop):
        the `ssh` they run reaches the box the way gputui did. With $HOME redirected (tests,
        `sudo -E`, a throwaway HOME) ssh would read the passwd home's config, keys and
        known_hosts: it gets the files gputui read instead (-F, IdentityFile,
        UserKnownHostsFile), so the same box is reached with the same trust."""
        dest = self.destination()
        if not home_redirected():
            return dest.ssh_args()
        dest.config = None
        argv = config_args(self) + dest.ssh_args()
        try:
            res = resolve(self)
        except ConnectError:  # ssh refuses the config: the hand-off's ssh will say why
            return argv
        for path in res.identity_files:
            argv += ["-o", "IdentityFile=%s" % _ssh_word(path)]
        if res.user_known_hosts:
            argv += ["-o", "UserKnownHostsFile=%s" % " ".join(_ssh_word(p) for p in res.user_known_hosts)]
        return argv

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
