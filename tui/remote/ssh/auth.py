"""Logging in to one hop: host-key policy, keys (agent first, then IdentityFile, lazily),
password and keyboard-interactive through ``Credentials``, whose answers are kept in memory
for this run only; and the one-line message for any failure."""

import asyncio
import logging
import os
import socket
import time

import asyncssh

from tui.core.i18n import _
from tui.remote.nodump import hold_secrets
from tui.remote.ssh.errors import ConnectError
from tui.remote.ssh.known_hosts import host_key_policy

log = logging.getLogger("gputui.ssh")

PASSWORD_TRIES = 3  # OpenSSH's NumberOfPasswordPrompts


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
                    self.creds.notes.append(_("no passphrase given for %s") % path)
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
        answer = await self._ask(self.creds.asker.ask_password(_("%s's password: ") % where))
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
            hold_secrets()  # held for reconnects: no core dumps, not dumpable
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
    text = _("Authentication failed for %s: the server offers %s") % (
        where, ", ".join(offered) if offered else _("no method"))
    text += _("; gputui tried %s") % (", ".join(tried) if tried else _("nothing it could use"))
    if notes:
        text += " (%s)" % "; ".join(dict.fromkeys(notes))
    if "password" in offered and "password" not in tried and \
            "keyboard-interactive" not in tried:
        text += _(". Check ssh-agent, IdentityFile in ~/.ssh/config and the box's authorized_keys")
    return text
