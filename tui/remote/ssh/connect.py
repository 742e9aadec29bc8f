"""Opening the connection: ProxyJump hop by hop (each hop its own known_hosts check and
name), ProxyCommand with its stderr in our log, keepalives and gputui's cipher order."""

import asyncio
import logging
import socket
import time
from typing import Optional

import asyncssh

from tui.core import ssh_g
from tui.core.transfer import link_sizes
from tui.core.destination import parse_destination
from tui.core.i18n import _
from tui.remote.ssh.auth import Credentials, _Client, auth_failure, describe_error
from tui.remote.ssh.errors import AuthFailed, ConnectError, NotRetryable
from tui.remote.ssh.known_hosts import (
    ChangedHostKey,
    UnknownHostKey,
    _key_line,
    _load_known,
    host_key_policy,
    host_port,
    known_host_name,
    known_hosts_paths,
)
from tui.remote.ssh.resolve import resolve
from tui.remote.ssh.target import Target

log = logging.getLogger("gputui.ssh")

KEEPALIVE_INTERVAL = 10  # s; with 2 missed replies a dead link is noticed in <= 30 s
KEEPALIVE_COUNT_MAX = 2
CONNECT_TIMEOUT = 15
# AES-GCM first: OpenSSL's AES-NI path through `cryptography` is several times faster than
# asyncssh's ChaCha20-Poly1305 in Python, which decides download speed. All are secure.
ENCRYPTION_ALGS = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com",
                   "chacha20-poly1305@openssh.com", "aes256-ctr", "aes192-ctr", "aes128-ctr")
MAX_HOPS = 8


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


def resolve_hop(spec, cfg_args, first):
    """A ProxyJump entry `[user@]host[:port]` resolved like ssh does for that hop.

    Only the first hop keeps its own ProxyJump (ssh runs `ssh -J earlier -W ... hop` for the
    later ones, and a command-line -J wins over the config)."""
    user, host, port = None, spec, None
    try:
        d = parse_destination([spec])
        user, host, port = d.user, d.host, d.port
    except ValueError as exc:
        raise ConnectError(_("ProxyJump entry %r is not user@host[:port]: %s") % (spec, exc))
    t = Target(host=host, port=port, username=user,
               ssh_config=cfg_args[1] if cfg_args else None,
               ssh_options=() if first else (("ProxyJump", "none"),))
    return resolve(t)


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
        raise ConnectError(_("ProxyCommand %r could not start: %s") % (command, exc))
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
                  kbdint_auth=res.kbdint_auth,
                  # every channel (SFTP, the probe's, the shell's) sized for long, fast links
                  window=link_sizes.WINDOW, max_pktsize=link_sizes.MAX_PKTSIZE)
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
    early, early_error = None, None
    if tunnel is None and not res.proxy_command:  # the CLI's head start may have it (issue 38)
        early, early_error = await asyncio.get_running_loop().run_in_executor(
            None, ssh_g.take_socket, res.hostname, res.port)
    if early is not None:
        kwargs["sock"] = early
    task = asyncio.ensure_future(asyncssh.create_connection(
        lambda: client, res.hostname, res.port, **kwargs))
    t0 = time.monotonic()
    try:
        if isinstance(early_error, socket.timeout):  # what waiting here would have come to
            task.cancel()
            raise asyncio.TimeoutError()
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
                             write if persist else _("memory for this run only (your ssh config "
                                                     "sets UserKnownHostsFile %s)")
                             % (res.user_known_hosts or ["none"])[0],
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
        raise ConnectError(_("ProxyJump chain longer than %d hops (a loop?)") % MAX_HOPS)
    loop = asyncio.get_running_loop()
    hops = []
    try:
        tunnel = None
        for i, spec in enumerate(res.proxy_jump):
            hop = await loop.run_in_executor(None, resolve_hop, spec, res.config_args, i == 0)
            label = _("jump host %s (%s)") % (spec, host_port(hop.hostname, hop.port))
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
        raise ConnectError(_("Cannot use the SSH settings for %s: %s") % (target.host, exc))
    conn = await _open(res, creds)
    if res.where() in creds.password_used:
        from tui.remote.ssh.key_install import offer_key_install  # only after a password login
        await offer_key_install(conn, res, creds)
    return conn
