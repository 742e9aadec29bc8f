"""What a destination means: `ssh -G` (OpenSSH's own resolved view), or asyncssh's parser
where there is no `ssh` binary. Paths expanded, %-tokens replaced, per hop."""

import dataclasses
import getpass
import hashlib
import logging
import os
import shutil
import socket
import subprocess
from typing import List, Optional

import asyncssh

from tui.core import ssh_g
from tui.core.i18n import _
from tui.core.ssh_g import home_redirected, parse_ssh_g, passwd_home, user_home  # noqa: F401 - this package's API
from tui.remote.ssh.errors import ConnectError, NotRetryable
from tui.remote.ssh.known_hosts import host_port

log = logging.getLogger("gputui.ssh")


@dataclasses.dataclass
class Resolved:
    """One hop's settings as OpenSSH resolves them; paths expanded, tokens replaced."""

    original: str
    hostname: str
    port: int
    user: str
    identity_files: List[str]
    identities_only: bool = False
    identity_agent: Optional[str] = None  # None: $SSH_AUTH_SOCK; "none": no agent
    proxy_jump: List[str] = dataclasses.field(default_factory=list)
    proxy_command: Optional[str] = None
    user_known_hosts: List[str] = dataclasses.field(default_factory=list)
    global_known_hosts: List[str] = dataclasses.field(default_factory=list)
    strict: str = "ask"  # ask | yes | no | accept-new
    host_key_alias: Optional[str] = None
    connect_timeout: Optional[int] = None
    server_alive_interval: int = 0
    server_alive_count_max: int = 3
    ciphers: List[str] = dataclasses.field(default_factory=list)
    pubkey_auth: bool = True
    password_auth: bool = True
    kbdint_auth: bool = True
    preferred_auth: List[str] = dataclasses.field(default_factory=list)
    batch_mode: bool = False
    hash_known_hosts: bool = False
    certificate_files: List[str] = dataclasses.field(default_factory=list)
    config_args: List[str] = dataclasses.field(default_factory=list)  # -F for the hops

    def where(self):
        return "%s@%s" % (self.user, host_port(self.hostname, self.port))


def config_args(target):
    """-F for `ssh -G`: the given file; or, with $HOME redirected, $HOME/.ssh/config."""
    return ssh_g.config_args(target.ssh_config)


def local_hostname():
    return socket.gethostname()


def expand_tokens(text, ctx):
    """OpenSSH %-tokens (ssh_config(5) TOKENS) with the final host, user and port known."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "%" and i + 1 < len(text):
            t = text[i + 1]
            if t == "%":
                out.append("%")
            elif t in ctx:
                out.append(ctx[t])
            else:
                raise ConnectError(_("unknown token %%%s in %r in your ssh config") % (t, text))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def token_context(original, hostname, port, user, jump="", alias=None):
    home = user_home()
    lhost = local_hostname()
    ctx = {"h": hostname, "n": original, "p": str(port), "r": user, "d": home,
           "u": getpass.getuser(), "l": lhost, "L": lhost.split(".")[0], "i": uid_text(),
           "j": jump or "", "k": alias or hostname}
    ctx["C"] = hashlib.sha1(("%s%s%s%s%s" % (lhost, hostname, port, user, jump or ""))
                            .encode()).hexdigest()
    return ctx


def uid_text():
    """%i: the local uid (there is none on Windows)."""
    return str(os.getuid()) if hasattr(os, "getuid") else ""


def expand_path(path, ctx):
    path = expand_tokens(path, ctx)
    if path == "~" or path.startswith("~/"):
        path = user_home() + path[1:]
    elif path.startswith("~"):
        path = os.path.expanduser(path)
    return path


def _rehome(path):
    """ssh expands ~ with the passwd home; with $HOME redirected, read that as $HOME."""
    if home_redirected():
        ph = passwd_home().rstrip("/") + "/"
        if path.startswith(ph):
            return os.path.join(user_home(), path[len(ph):])
    return path


def _yes(values, default=False):
    if not values:
        return default
    return values[0].lower() in ("yes", "true", "on")


def _int_or_none(values):
    if not values or values[0] in ("none", ""):
        return None
    try:
        return int(values[0])
    except ValueError:
        return None


def resolved_from_ssh_g(g, original, cfg_args=()):
    """Map parsed `ssh -G` output to Resolved (tokens in IdentityFile etc. expanded here)."""
    hostname = (g.get("hostname") or [original])[0]
    port = int((g.get("port") or ["22"])[0])
    user = (g.get("user") or [getpass.getuser()])[0]
    jump = (g.get("proxyjump") or [""])[0]
    jump = "" if jump == "none" else jump
    alias = (g.get("hostkeyalias") or [None])[0]
    ctx = token_context(original, hostname, port, user, jump, alias)
    proxy = (g.get("proxycommand") or [None])[0]
    if proxy in (None, "none") or jump:
        proxy = None  # ProxyJump and ProxyCommand: the first one set wins; ssh -G shows both
    else:
        proxy = expand_tokens(proxy, ctx)
    agent = (g.get("identityagent") or [None])[0]
    if agent not in (None, "none", "SSH_AUTH_SOCK"):
        agent = expand_path(agent, ctx)
    return Resolved(
        original=original, hostname=hostname, port=port, user=user,
        identity_files=[expand_path(p, ctx) for p in g.get("identityfile", [])],
        identities_only=_yes(g.get("identitiesonly")),
        identity_agent=None if agent == "SSH_AUTH_SOCK" else agent,
        proxy_jump=[h for h in jump.split(",") if h] if jump else [],
        proxy_command=proxy,
        user_known_hosts=[_rehome(p) for v in g.get("userknownhostsfile", []) for p in v.split()],
        global_known_hosts=[p for v in g.get("globalknownhostsfile", []) for p in v.split()],
        strict=(g.get("stricthostkeychecking") or ["ask"])[0].lower().replace("false", "no")
        .replace("true", "yes"),
        host_key_alias=alias,
        connect_timeout=_int_or_none(g.get("connecttimeout")),
        server_alive_interval=_int_or_none(g.get("serveraliveinterval")) or 0,
        server_alive_count_max=_int_or_none(g.get("serveralivecountmax")) or 3,
        ciphers=[c for v in g.get("ciphers", []) for c in v.split(",") if c],
        pubkey_auth=_yes(g.get("pubkeyauthentication"), True),
        password_auth=_yes(g.get("passwordauthentication"), True),
        kbdint_auth=_yes(g.get("kbdinteractiveauthentication"), True),
        preferred_auth=[m for v in g.get("preferredauthentications", []) for m in v.split(",")],
        batch_mode=_yes(g.get("batchmode")),
        hash_known_hosts=_yes(g.get("hashknownhosts")),
        certificate_files=[expand_path(p, ctx) for p in g.get("certificatefile", [])],
        config_args=list(cfg_args))


class NoSshG(Exception):
    """This ssh is too old to print its resolved config."""


def ssh_binary():
    return shutil.which("ssh")


def run_ssh_g(argv):
    """Run `ssh -G`; ConnectError with ssh's own words when it refuses the config."""
    done = ssh_g.take_ssh_g(argv)  # the CLI's head start ran this very command (issue 38)
    try:
        if done is None:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, timeout=30)
        elif isinstance(done, BaseException):
            raise done
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ConnectError(_("Cannot read the ssh config with %s: %s") % (argv[0], exc))
    if done.returncode != 0 and ("illegal option -- G" in done.stderr
                                 or "unknown option -- G" in done.stderr):
        raise NoSshG()
    if done.returncode != 0:
        # The "Pseudo-terminal ..." note is noise; the rest is why ssh refused.
        why = " ".join(line for line in done.stderr.splitlines()
                       if line.strip() and "Pseudo-terminal" not in line)
        raise NotRetryable(_("Your ssh config cannot be used for %s: %s")
                           % (argv[-1], why or _("ssh -G exited with %d") % done.returncode))
    return done.stdout


def resolve(target, binary=None) -> Resolved:
    """Target -> Resolved through `ssh -G` (OpenSSH's meaning) or asyncssh's parser."""
    binary = binary if binary is not None else ssh_binary()
    cfg = config_args(target)
    args = target.destination()
    args.config = None  # -F comes from config_args
    args = args.ssh_args()
    if binary:
        try:
            text = run_ssh_g([binary, "-G", *cfg, *args, "--", target.host])
        except NoSshG:
            log.info("%s has no -G (OpenSSH < 6.8): using asyncssh's config parser", binary)
        else:
            return resolved_from_ssh_g(parse_ssh_g(text), target.host, cfg)
    return resolve_with_asyncssh(target, cfg)


def resolve_with_asyncssh(target, cfg_args):
    """Fallback without an `ssh` binary: asyncssh's config parser (less exact)."""
    from asyncssh.config import SSHClientConfig
    if cfg_args:
        paths = [cfg_args[1]] if cfg_args[1] != "/dev/null" else []
    else:
        default = os.path.join(user_home(), ".ssh", "config")
        paths = [default] if os.path.exists(default) else []
    try:
        cfg = SSHClientConfig.load(None, paths, False, False, False, getpass.getuser(),
                                   target.username or (), target.host, target.port or ())
    except (OSError, asyncssh.Error, ValueError) as exc:
        raise ConnectError(_("Cannot read the ssh config for %s: %s") % (target.host, exc))
    opts = {k.lower(): v for k, v in target.ssh_options}
    get = lambda key, default=None: opts.get(key.lower(), cfg.get(key, default))  # noqa: E731
    hostname = get("Hostname") or target.host
    port = int(target.port or get("Port") or 22)
    user = target.username or get("User") or getpass.getuser()
    jump = target.jump or get("ProxyJump") or ""
    jump = "" if jump == "none" else jump
    ctx = token_context(target.host, hostname, port, user, jump)
    files = list(target.client_keys or []) + list(get("IdentityFile") or [])
    if not files:
        files = ["~/.ssh/id_rsa", "~/.ssh/id_ecdsa", "~/.ssh/id_ed25519"]
    known = get("UserKnownHostsFile") or ["~/.ssh/known_hosts", "~/.ssh/known_hosts2"]
    if isinstance(known, str):
        known = known.split()
    proxy = get("ProxyCommand")
    if isinstance(proxy, (list, tuple)):
        proxy = " ".join(proxy)
    ciphers = get("Ciphers") or ()
    if isinstance(ciphers, str):
        ciphers = ciphers.split(",")
    return Resolved(
        original=target.host, hostname=hostname, port=port, user=user,
        identity_files=[expand_path(str(p), ctx) for p in files],
        identities_only=bool(get("IdentitiesOnly")),
        proxy_jump=[h for h in jump.split(",") if h],
        proxy_command=None if jump or not proxy or proxy == "none" else expand_tokens(proxy, ctx),
        user_known_hosts=[expand_path(str(p), ctx) for p in known],
        global_known_hosts=["/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"],
        strict=str(opts.get("stricthostkeychecking", "ask")).lower(),
        connect_timeout=int(get("ConnectTimeout")) if get("ConnectTimeout") else None,
        server_alive_interval=int(get("ServerAliveInterval") or 0),
        server_alive_count_max=int(get("ServerAliveCountMax") or 3),
        ciphers=list(ciphers), config_args=list(cfg_args))
