"""SSH connections to the box, with ~/.ssh/config meaning what OpenSSH says it means.

Resolution: where the `ssh` binary exists, `ssh -G [options] DEST` prints OpenSSH's own
resolved view (Include globs, Host negation, Match exec, tokens); we map that to asyncssh
keyword arguments and call asyncssh with ``config=[]`` so it never re-parses the config
(asyncssh sorts no Include globs, expands some tokens early and has no
StrictHostKeyChecking). Without `ssh`, asyncssh's own parser is the fallback.

Host keys (DESIGN.md safety rules): asyncssh verifies against the known_hosts files the
config names (read by us, so `UserKnownHostsFile none` still checks). An unknown key fails
with ``UnknownHostKey`` carrying the fingerprint and the hop it belongs to; the caller asks
the user and, on an explicit yes, ``trust_host_key`` records it. A changed key raises
``ChangedHostKey`` and is never offered for trust. ``StrictHostKeyChecking accept-new``
records a first key silently, ``no`` (only when the config says so) accepts an unknown one,
``yes`` refuses it.

ProxyJump is opened hop by hop (each hop its own known_hosts check and name); ProxyCommand
runs with its stderr going to our log, never onto the terminal.

Logins: keys from the agent, then IdentityFile in order (loaded lazily; an encrypted one
asks for its passphrase), then password / keyboard-interactive through ``Credentials``,
whose answers are kept in memory for this run only.
"""

import asyncio
import dataclasses
import getpass
import hashlib
import logging
import os
import pwd
import shlex
import shutil
import socket
import subprocess
import time
from typing import List, Optional, Tuple

import asyncssh

from tui.core.destination import Destination, parse_destination
from tui.core.i18n import _
from tui.remote.nodump import hold_secrets

log = logging.getLogger("gputui.ssh")

KEEPALIVE_INTERVAL = 10  # s; with 2 missed replies a dead link is noticed in <= 30 s
KEEPALIVE_COUNT_MAX = 2
CONNECT_TIMEOUT = 15
# AES-GCM first: OpenSSL's AES-NI path through `cryptography` is several times faster than
# asyncssh's ChaCha20-Poly1305 in Python, which decides download speed. All are secure.
ENCRYPTION_ALGS = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com",
                   "chacha20-poly1305@openssh.com", "aes256-ctr", "aes192-ctr", "aes128-ctr")
MAX_HOPS = 8
PASSWORD_TRIES = 3  # OpenSSH's NumberOfPasswordPrompts
NO_FILE = ("none", "/dev/null")


class ConnectError(Exception):
    """A connection failure with a one-line explanation for the user."""


class NotRetryable(ConnectError):
    """Waiting will not fix it (login refused, config unusable, key policy says no)."""


class AuthFailed(NotRetryable):
    """No login method the server offers worked."""


# -- what to connect to -------------------------------------------------------------------
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


# -- resolution: ssh -G, or asyncssh's parser --------------------------------------------
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


def user_home():
    """gputui's home: $HOME, like asyncssh and other Python tools (ssh itself uses passwd)."""
    return os.path.expanduser("~")


def passwd_home():
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return user_home()


def home_redirected():
    """True when $HOME is not the passwd home (tests, sudo -E): ssh would read the other."""
    return os.path.realpath(user_home()) != os.path.realpath(passwd_home())


def config_args(target):
    """-F for `ssh -G`: the given file; or, with $HOME redirected, $HOME/.ssh/config."""
    if target.ssh_config:
        return ["-F", os.path.expanduser(target.ssh_config)]
    if home_redirected():
        path = os.path.join(user_home(), ".ssh", "config")
        return ["-F", path if os.path.exists(path) else "/dev/null"]
    return []


def parse_ssh_g(text):
    """`ssh -G` output -> {lowercase key: [values in order]} (repeated keys kept)."""
    out = {}
    for line in text.splitlines():
        key, _, value = line.strip().partition(" ")
        if key:
            out.setdefault(key.lower(), []).append(value.strip())
    return out


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
                raise ConnectError("unknown token %%%s in %r in your ssh config" % (t, text))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def token_context(original, hostname, port, user, jump="", alias=None):
    home = user_home()
    lhost = local_hostname()
    ctx = {"h": hostname, "n": original, "p": str(port), "r": user, "d": home,
           "u": getpass.getuser(), "l": lhost, "L": lhost.split(".")[0], "i": str(os.getuid()),
           "j": jump or "", "k": alias or hostname}
    ctx["C"] = hashlib.sha1(("%s%s%s%s%s" % (lhost, hostname, port, user, jump or ""))
                            .encode()).hexdigest()
    return ctx


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
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ConnectError("Cannot read the ssh config with %s: %s" % (argv[0], exc))
    if done.returncode != 0 and ("illegal option -- G" in done.stderr
                                 or "unknown option -- G" in done.stderr):
        raise NoSshG()
    if done.returncode != 0:
        # The "Pseudo-terminal ..." note is noise; the rest is why ssh refused.
        why = " ".join(line for line in done.stderr.splitlines()
                       if line.strip() and "Pseudo-terminal" not in line)
        raise NotRetryable("Your ssh config cannot be used for %s: %s"
                           % (argv[-1], why or "ssh -G exited with %d" % done.returncode))
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
        raise ConnectError("Cannot read the ssh config for %s: %s" % (target.host, exc))
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


def resolve_hop(spec, cfg_args, first):
    """A ProxyJump entry `[user@]host[:port]` resolved like ssh does for that hop.

    Only the first hop keeps its own ProxyJump (ssh runs `ssh -J earlier -W ... hop` for the
    later ones, and a command-line -J wins over the config)."""
    user, host, port = None, spec, None
    try:
        d = parse_destination([spec])
        user, host, port = d.user, d.host, d.port
    except ValueError as exc:
        raise ConnectError("ProxyJump entry %r is not user@host[:port]: %s" % (spec, exc))
    t = Target(host=host, port=port, username=user,
               ssh_config=cfg_args[1] if cfg_args else None,
               ssh_options=() if first else (("ProxyJump", "none"),))
    return resolve(t)


# -- what asyncssh gets ------------------------------------------------------------------
def merged_ciphers(user_ciphers):
    """The user's allowed ciphers in gputui's speed order, then the rest of theirs."""
    supported = {a.decode() for a in asyncssh.encryption.get_encryption_algs()}
    allowed = [c for c in user_ciphers if c in supported] or list(ENCRYPTION_ALGS)
    ordered = [c for c in ENCRYPTION_ALGS if c in allowed]
    return ordered + [c for c in allowed if c not in ordered]


def keepalive(res):
    """(interval, count_max): the user's ServerAlive* when set, else gputui's defaults."""
    if res.server_alive_interval > 0:
        return res.server_alive_interval, res.server_alive_count_max
    return KEEPALIVE_INTERVAL, KEEPALIVE_COUNT_MAX


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
    return host if port in (None, 22) else "%s:%s" % (host, port)


def known_host_name(host, port):
    """How OpenSSH writes a host in known_hosts."""
    return host if port in (None, 22) else "[%s]:%s" % (host, port)


# -- credentials -------------------------------------------------------------------------
class Asker:
    """What the caller supplies to ask the user; every method may return None (cancel)."""

    async def ask_password(self, prompt):
        return None

    async def ask_kbdint(self, name, instructions, prompts):
        """prompts: [(text, echo)] -> [answers] or None."""
        return None

    async def ask_passphrase(self, keyfile):
        return None

    async def offer_key_install(self, where, pubkey_path, will_create):
        """After a password login: install the user's key on the box? (explicit yes)."""
        return False

    def tell(self, message):
        """Something the user should know (a key created or installed, or why not)."""


class Credentials:
    """Answers for this run only: kept in memory for reconnects, written nowhere."""

    def __init__(self, asker=None):
        self.asker = asker or Asker()
        self.passwords = {}      # "user@host:port" -> password that worked
        self.passphrases = {}    # key file -> passphrase
        self.session_keys = {}   # known_hosts name -> [key] trusted for this run (no file)
        self.password_used = set()  # hops where a password logged in
        # why a prompt got no answer (no terminal ...); shared with the asker when it keeps one
        self.notes = getattr(self.asker, "notes", None)
        if not isinstance(self.notes, list):
            self.notes = []


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
            % (label or host_port(host, port), self.fingerprint, known_host_name(host, port),
               known_hosts_file))


def _key_line(name, key, hashed=False):
    if hashed:
        name = hashed_host_name(name)
    return "%s %s\n" % (name, " ".join(key.export_public_key("openssh").decode().split()[:2]))


def hashed_host_name(name, salt=None):
    """known_hosts `|1|salt|hmac` form, as ssh writes it under HashKnownHosts yes."""
    import base64
    import hmac
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
            raise ConnectError("Cannot read known_hosts %s: %s" % (path, exc.strerror or exc))
    for name, keys in (memory or {}).items():
        text.extend(_key_line(name, k) for k in keys)
    try:
        return asyncssh.import_known_hosts("".join(text))
    except (ValueError, asyncssh.Error) as exc:
        raise ConnectError("Cannot parse known_hosts (%s): %s" % (", ".join(paths), exc))


class _Client(asyncssh.SSHClient):
    """One hop's login: host-key policy, lazy keys, passwords through Credentials."""

    def __init__(self, res, creds, known, label):
        self.res, self.creds, self.known, self.label = res, creds, known, label
        self.offered = None
        self.lost = None
        self.conn = None
        self.accepted_new = None  # a first key accepted by policy, recorded after login
        self.tried = []
        self.prompting = False
        self.prompt_seconds = 0.0
        self._keys = None
        self._agent = None
        self._password_tries = 0
        self.server_methods = []  # what the server offered, seen while it was offering

    def _note_methods(self):
        if self.conn is not None:
            for m in self.conn.get_server_auth_methods():
                if m != "none" and m not in self.server_methods:
                    self.server_methods.append(m)

    def connection_made(self, conn):
        self.conn = conn

    def connection_lost(self, exc):
        self.lost = exc

    def _has_known_key(self, host, addr, port):
        """Is some key on record for this host name? By name only: OpenSSH's default
        CheckHostIP no, so a recycled IP with another box's old key is 'unknown', not
        'changed'."""
        port = None if port in (None, 22) else port
        name = self.res.host_key_alias or host
        return bool(asyncssh.match_known_hosts(self.known, name, "", port)[0])

    def validate_host_public_key(self, host, addr, port, key):
        self.offered = (host, addr, port, key)
        if self._has_known_key(host, addr, port):
            return False  # a different key than the known one: refused, never offered
        if host_key_policy(self.res.strict) == "accept":
            self.accepted_new = (host, port, key)
            return True
        return False

    async def _ask(self, coro):
        self.prompting = True
        t0 = time.monotonic()
        try:
            return await coro
        finally:
            self.prompting = False
            self.prompt_seconds += time.monotonic() - t0

    # keys: agent first, then IdentityFile in order, like ssh
    async def _key_list(self):
        keys = []
        agent_path = self.res.identity_agent or os.environ.get("SSH_AUTH_SOCK")
        if agent_path and agent_path != "none":
            try:
                self._agent = asyncssh.SSHAgentClient(agent_path)
                agent_keys = await self._agent.get_keys()
                if self.res.identities_only:
                    wanted = set()
                    for path in self.res.identity_files:
                        try:
                            wanted.add(asyncssh.read_public_key(path + ".pub").public_data)
                        except (OSError, ValueError, asyncssh.KeyImportError):
                            pass
                    agent_keys = [k for k in agent_keys if k.public_data in wanted]
                keys.extend(("agent", k) for k in agent_keys)
            except (OSError, ValueError, asyncssh.Error) as exc:
                log.info("ssh-agent not used: %s", exc)
        keys.extend(("file", p) for p in self.res.identity_files if os.path.isfile(p))
        return keys

    async def _load_file_key(self, path):
        """The key pairs in one IdentityFile; an encrypted key asks for its passphrase."""
        passphrase = self.creds.passphrases.get(path)
        for _attempt in range(PASSWORD_TRIES + 1):
            try:
                certs = [c for c in self.res.certificate_files if os.path.isfile(c)]
                pairs = asyncssh.load_keypairs([path], passphrase=passphrase, certlist=certs)
            except (asyncssh.KeyImportError, asyncssh.KeyEncryptionError) as exc:
                text = str(exc)
                if "Passphrase must be specified" not in text and "Incorrect passphrase" not in text:
                    log.info("key %s not usable: %s", path, exc)  # e.g. a type asyncssh lacks
                    return []
                passphrase = await self._ask(self.creds.asker.ask_passphrase(path))
                if passphrase is None:
                    self.creds.notes.append("no passphrase given for %s" % path)
                    return []
                continue
            except (OSError, ValueError, asyncssh.Error) as exc:
                log.info("key %s not usable: %s", path, exc)
                return []
            if passphrase is not None:
                self.creds.passphrases[path] = passphrase
            return pairs
        return []

    async def public_key_auth_requested(self):
        self._note_methods()
        if self._keys is None:
            self._keys = await self._key_list()
        while self._keys:
            kind, item = self._keys.pop(0)
            if kind == "agent":
                self.tried.append("agent key")
                return item
            pairs = await self._load_file_key(item)
            if pairs:
                self.tried.append(os.path.basename(item))
                return pairs
        return None

    def _where(self):
        return self.res.where()

    async def password_auth_requested(self):
        self._note_methods()
        where = self._where()
        if self._password_tries == 0 and where in self.creds.passwords:
            self._password_tries += 1
            return self.creds.passwords[where]
        if self._password_tries >= PASSWORD_TRIES or self.res.batch_mode:
            return None
        self._password_tries += 1
        if "password" not in self.tried:
            self.tried.append("password")
        answer = await self._ask(self.creds.asker.ask_password("%s's password: " % where))
        if answer is not None:
            self._last_password = answer
        return answer

    async def kbdint_auth_requested(self):
        self._note_methods()
        # asyncssh asks again after each failure: a cap, or a server that fails at once loops
        self._kbdint_requests = getattr(self, "_kbdint_requests", 0) + 1
        if self.res.batch_mode or self._kbdint_requests > PASSWORD_TRIES:
            return None
        return ""

    async def kbdint_challenge_received(self, name, instructions, lang, prompts):
        if not prompts:
            return []
        where = self._where()
        single_secret = len(prompts) == 1 and not prompts[0][1] and \
            "password" in prompts[0][0].lower()
        if single_secret and self._password_tries == 0 and where in self.creds.passwords:
            self._password_tries += 1
            return [self.creds.passwords[where]]
        if self._password_tries >= PASSWORD_TRIES:
            return None
        self._password_tries += 1
        if "keyboard-interactive" not in self.tried:
            self.tried.append("keyboard-interactive")
        answers = await self._ask(self.creds.asker.ask_kbdint(name, instructions,
                                                              [(p, e) for p, e in prompts]))
        if answers is not None and single_secret:
            self._last_password = answers[0]
        return answers

    def auth_completed(self):
        pw = getattr(self, "_last_password", None)
        if pw is not None:
            hold_secrets()  # held for reconnects: no core dumps, not dumpable (issue 20)
            self.creds.passwords[self._where()] = pw
            self.creds.password_used.add(self._where())
        self.close_agent()

    def close_agent(self):
        if self._agent is not None:
            self._agent.close()
            self._agent = None


def describe_error(exc, where):
    """One clear line for any connection failure."""
    if isinstance(exc, ConnectError):
        return str(exc)
    if isinstance(exc, socket.gaierror):
        return _("Cannot resolve host %s: %s") % (where, exc.strerror or exc)
    if isinstance(exc, ConnectionRefusedError):
        return _("Connection refused by %s: is sshd running and is the port right?") % where
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return _("Timed out connecting to %s: the box is down or a firewall drops SSH") % where
    if isinstance(exc, asyncssh.PermissionDenied):
        return (_("Authentication failed for %s: no key was accepted (check ssh-agent, "
                  "IdentityFile in ~/.ssh/config, and the box's authorized_keys)") % where)
    if isinstance(exc, asyncssh.HostKeyNotVerifiable):
        return _("Host key of %s not verifiable: %s") % (where, exc.reason)
    if isinstance(exc, asyncssh.DisconnectError):
        return _("%s closed the connection: %s") % (where, exc.reason or exc)
    if isinstance(exc, OSError):
        return _("Cannot connect to %s: %s") % (where, exc.strerror or exc)
    if isinstance(exc, asyncssh.Error):
        return _("SSH error with %s: %s") % (where, exc.reason or exc)
    return _("Cannot connect to %s: %s") % (where, exc)


def auth_failure(where, offered, tried, notes):
    """`Authentication failed` naming what the server offered and what was tried."""
    text = "Authentication failed for %s: the server offers %s" % (
        where, ", ".join(offered) if offered else "no method")
    text += "; gputui tried %s" % (", ".join(tried) if tried else "nothing it could use")
    if notes:
        text += " (%s)" % "; ".join(dict.fromkeys(notes))
    if "password" in offered and "password" not in tried and \
            "keyboard-interactive" not in tried:
        text += ". Check ssh-agent, IdentityFile in ~/.ssh/config and the box's authorized_keys"
    return text


async def _proxy_command_sock(command):
    """Run ProxyCommand like ssh (`sh -c 'exec CMD'`) on a socketpair; its stderr goes to
    our log, never onto the terminal under the dashboard."""
    ours, theirs = socket.socketpair()
    try:
        proc = await asyncio.create_subprocess_exec(
            "/bin/sh", "-c", "exec " + command, stdin=theirs, stdout=theirs,
            stderr=asyncio.subprocess.PIPE, start_new_session=True)
    except OSError as exc:
        ours.close()
        raise ConnectError("ProxyCommand %r could not start: %s" % (command, exc))
    finally:
        theirs.close()

    async def drain():
        async for line in proc.stderr:
            log.info("ProxyCommand: %s", line.decode("utf-8", "replace").rstrip())
    asyncio.ensure_future(drain())
    return ours, proc


async def _connect_one(res, creds, tunnel=None, label=None, timeout=None):
    """Open one hop; UnknownHostKey / ChangedHostKey / ConnectError on failure."""
    read, write = known_hosts_paths(res)
    known = _load_known(read, creds.session_keys)
    net_where = label or host_port(res.hostname, res.port)  # for network errors
    auth_where = "%s as %s" % (label, res.user) if label else res.where()
    label = label or res.where()
    client = _Client(res, creds, known, label)
    interval, count = keepalive(res)
    kwargs = dict(username=res.user, config=[], known_hosts=known, client_keys=None,
                  agent_path=None, keepalive_interval=interval, keepalive_count_max=count,
                  encryption_algs=merged_ciphers(res.ciphers),
                  public_key_auth=res.pubkey_auth, password_auth=res.password_auth,
                  kbdint_auth=res.kbdint_auth)
    if res.preferred_auth:
        kwargs["preferred_auth"] = [m for m in res.preferred_auth if m in (
            "publickey", "password", "keyboard-interactive", "hostbased", "gssapi-with-mic",
            "gssapi-keyex")] or ()
    if res.host_key_alias:
        kwargs["host_key_alias"] = res.host_key_alias
    proxy = None
    if tunnel is not None:
        kwargs["tunnel"] = tunnel
    elif res.proxy_command:
        sock, proxy = await _proxy_command_sock(res.proxy_command)
        kwargs["sock"] = sock
    timeout = timeout or res.connect_timeout or CONNECT_TIMEOUT
    task = asyncio.ensure_future(asyncssh.create_connection(
        lambda: client, res.hostname, res.port, **kwargs))
    t0 = time.monotonic()
    try:
        # The timeout counts the network, not the time the user spends typing a password.
        while True:
            left = timeout - (time.monotonic() - t0 - client.prompt_seconds)
            done, _pending = await asyncio.wait({task}, timeout=max(0.2, left))
            if done:
                break
            if not client.prompting and left <= 0:
                task.cancel()
                raise asyncio.TimeoutError()
        conn, _client = task.result()
    except asyncssh.HostKeyNotVerifiable as exc:
        _stop(proxy)
        client.close_agent()
        if client.offered is None:
            raise ConnectError(describe_error(exc, label))
        host, _addr, port, key = client.offered
        if client._has_known_key(host, _addr, port):
            raise ChangedHostKey(host, port, key, write or (read[0] if read else "known_hosts"),
                                 label=label)
        if host_key_policy(res.strict) == "refuse":
            raise NotRetryable(_("Host key for %s is not known and your ssh config says "
                                 "StrictHostKeyChecking yes: add it to %s first (fingerprint %s)")
                               % (label, write or "known_hosts", key.get_fingerprint("sha256")))
        persist = write is not None
        raise UnknownHostKey(host, port, key,
                             write if persist else "memory for this run only (your ssh config "
                             "sets UserKnownHostsFile %s)" % (res.user_known_hosts or ["none"])[0],
                             label=label, persist=persist, memory=creds.session_keys,
                             hashed=res.hash_known_hosts)
    except asyncssh.PermissionDenied as exc:
        _stop(proxy)
        client.close_agent()
        client._note_methods()
        offered = client.server_methods
        raise AuthFailed(auth_failure(auth_where, offered, client.tried,
                                        creds.notes)) from exc
    except asyncio.CancelledError:
        task.cancel()
        _stop(proxy)
        raise
    except Exception as exc:  # everything else becomes one line for the UI
        _stop(proxy)
        client.close_agent()
        if isinstance(exc, ConnectError):
            raise
        raise ConnectError(describe_error(exc, net_where)) from exc
    if client.accepted_new is not None and write is not None:
        host, port, key = client.accepted_new
        try:
            with open(write, "a", encoding="utf-8") as f:
                f.write(_key_line(known_host_name(res.host_key_alias or host, port), key,
                                  res.hash_known_hosts))
        except OSError as exc:
            log.warning("could not record the new host key in %s: %s", write, exc)
    return conn


def _stop(proc):
    if proc is not None and proc.returncode is None:
        try:
            proc.kill()
        except ProcessLookupError:
            pass


async def _open(res, creds, depth=0):
    """Connect to `res`, through its jump chain hop by hop."""
    if depth > MAX_HOPS:
        raise ConnectError("ProxyJump chain longer than %d hops (a loop?)" % MAX_HOPS)
    loop = asyncio.get_running_loop()
    hops = []
    try:
        tunnel = None
        for i, spec in enumerate(res.proxy_jump):
            hop = await loop.run_in_executor(None, resolve_hop, spec, res.config_args, i == 0)
            label = "jump host %s (%s)" % (spec, host_port(hop.hostname, hop.port))
            if i == 0 and hop.proxy_jump:
                conn = await _open(hop, creds, depth + 1)
            else:
                conn = await _connect_one(hop, creds, tunnel=tunnel, label=label)
            if tunnel is not None:
                conn.set_tunnel(tunnel)  # closing a hop closes the ones under it
            hops.append(conn)
            tunnel = conn
        conn = await _connect_one(res, creds, tunnel=tunnel)
        if tunnel is not None:
            conn.set_tunnel(tunnel)
        return conn
    except BaseException:
        for c in reversed(hops):
            c.close()
        raise


async def connect(target: Target, creds: Optional[Credentials] = None):
    """Open an SSH connection; raise ConnectError (or a subclass) with a clear message."""
    creds = creds if creds is not None else Credentials()
    try:
        res = await asyncio.get_running_loop().run_in_executor(None, resolve, target)
    except ConnectError:
        raise
    except (OSError, ValueError) as exc:
        raise ConnectError("Cannot use the SSH settings for %s: %s" % (target.host, exc))
    conn = await _open(res, creds)
    if res.where() in creds.password_used:
        await offer_key_install(conn, res, creds)
    return conn


# -- after a password login: ssh-copy-id --------------------------------------------------
def default_key_path():
    return os.path.join(user_home(), ".ssh", "id_ed25519")


def pick_public_key(res):
    """The key to install: the first configured IdentityFile with a .pub, else id_ed25519."""
    for path in res.identity_files:
        if os.path.isfile(path) and os.path.isfile(path + ".pub"):
            return path
    return default_key_path()


def create_key(path):
    """A new ed25519 key without a passphrase (like `ssh-keygen -t ed25519 -N ''`)."""
    key = asyncssh.generate_private_key("ssh-ed25519", comment="%s@%s gputui" % (
        getpass.getuser(), local_hostname()))
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    key.write_private_key(path)
    os.chmod(path, 0o600)
    key.write_public_key(path + ".pub")
    return path


def authorized_keys_command(pub_line):
    """Append one key to ~/.ssh/authorized_keys unless it is there (quoted; idempotent)."""
    q = shlex.quote(pub_line.strip())
    return ("umask 077; mkdir -p ~/.ssh && touch ~/.ssh/authorized_keys && "
            "(grep -qxF %s ~/.ssh/authorized_keys || printf '%%s\\n' %s >> ~/.ssh/authorized_keys)"
            % (q, q))


async def install_public_key(conn, key_path):
    with open(key_path + ".pub", encoding="utf-8") as f:
        pub = " ".join(f.read().split()[:3])
    done = await conn.run(authorized_keys_command(pub), check=False)
    if done.exit_status != 0:
        raise ConnectError(_("Could not add your key to ~/.ssh/authorized_keys on the box: %s")
                           % (done.stderr or "exit %s" % done.exit_status).strip())


async def offer_key_install(conn, res, creds):
    """Once per password login: offer (explicit yes) to install the user's key."""
    key_path = pick_public_key(res)
    will_create = not os.path.isfile(key_path)
    try:
        yes = await creds.asker.offer_key_install(res.where(), key_path + ".pub", will_create)
    except Exception as exc:  # noqa: BLE001 - an offer that fails must not stop the login
        log.warning("key install offer failed: %s", exc)
        return
    creds.password_used.discard(res.where())
    if not yes:
        return
    try:
        if will_create:
            create_key(key_path)
            creds.asker.tell("Created %s (no passphrase)." % key_path)
        await install_public_key(conn, key_path)
        creds.asker.tell("Installed %s on %s: the next connect needs no password."
                         % (key_path + ".pub", res.where()))
    except (OSError, asyncssh.Error, ConnectError) as exc:
        log.warning("key install failed: %s", exc)
        creds.asker.tell("Could not install your key: %s" % exc)
