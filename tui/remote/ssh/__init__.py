"""SSH connections to the box, with ~/.ssh/config meaning what OpenSSH says it means.

Resolution: where the `ssh` binary exists, `ssh -G [options] DEST` prints OpenSSH's own
resolved view (Include globs, Host negation, Match exec, tokens); we map that to asyncssh
keyword arguments and call asyncssh with ``config=[]`` so it never re-parses the config
(asyncssh sorts no Include globs, expands some tokens early and has no
StrictHostKeyChecking). Without `ssh`, asyncssh's own parser is the fallback.

Host keys (docs/architecture.md, "Safety rules"): asyncssh verifies against the known_hosts files the
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

Modules: ``target`` (what to connect to), ``resolve`` (`ssh -G` or asyncssh's parser),
``known_hosts`` (host keys), ``auth`` (logins and credentials), ``connect`` (jump hosts,
ProxyCommand, the connection), ``key_install`` (ssh-copy-id after a password login). This
package's names are the API; callers write ``from tui.remote import ssh`` and ``ssh.X``.
"""

from tui.remote.ssh.auth import PASSWORD_TRIES, Asker, Credentials, auth_failure, describe_error
from tui.remote.ssh.connect import (
    CONNECT_TIMEOUT,
    ENCRYPTION_ALGS,
    KEEPALIVE_COUNT_MAX,
    KEEPALIVE_INTERVAL,
    MAX_HOPS,
    connect,
    keepalive,
    merged_ciphers,
    resolve_hop,
)
from tui.remote.ssh.errors import AuthFailed, ConnectError, NotRetryable
from tui.remote.ssh.key_install import (
    authorized_keys_command,
    create_key,
    default_key_path,
    install_public_key,
    offer_key_install,
    pick_public_key,
)
from tui.remote.ssh.known_hosts import (
    NO_FILE,
    ChangedHostKey,
    UnknownHostKey,
    _key_line,
    hashed_host_name,
    host_key_policy,
    host_port,
    known_host_name,
    known_hosts_paths,
    trust_host_key,
)
from tui.remote.ssh.resolve import (
    NoSshG,
    Resolved,
    config_args,
    expand_path,
    expand_tokens,
    home_redirected,
    local_hostname,
    parse_ssh_g,
    passwd_home,
    resolve,
    resolve_with_asyncssh,
    resolved_from_ssh_g,
    run_ssh_g,
    ssh_binary,
    token_context,
    user_home,
)
from tui.remote.ssh.target import Target

__all__ = [
    "AuthFailed", "Asker", "CONNECT_TIMEOUT", "ChangedHostKey", "ConnectError", "Credentials",
    "ENCRYPTION_ALGS", "KEEPALIVE_COUNT_MAX", "KEEPALIVE_INTERVAL", "MAX_HOPS", "NO_FILE",
    "NoSshG", "NotRetryable", "PASSWORD_TRIES", "Resolved", "Target", "UnknownHostKey",
    "_key_line", "auth_failure", "authorized_keys_command", "config_args", "connect",
    "create_key", "default_key_path", "describe_error", "expand_path", "expand_tokens",
    "hashed_host_name", "home_redirected", "host_key_policy", "host_port", "install_public_key",
    "keepalive", "known_host_name", "known_hosts_paths", "local_hostname", "merged_ciphers",
    "offer_key_install", "parse_ssh_g", "passwd_home", "pick_public_key", "resolve",
    "resolve_hop", "resolve_with_asyncssh", "resolved_from_ssh_g", "run_ssh_g", "ssh_binary",
    "token_context", "trust_host_key", "user_home",
]
