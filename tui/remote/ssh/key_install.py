"""After a password login: offer to install the user's key (ssh-copy-id), explicit yes only."""

import getpass
import logging
import os
import shlex

import asyncssh

from tui.core.text import paste
from tui.core.i18n import _
from tui.remote.ssh.errors import ConnectError
from tui.remote.ssh.resolve import local_hostname, user_home

log = logging.getLogger("gputui.ssh")


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
    # through /bin/sh whatever the login shell: fish refuses `( … )`, csh the `||`
    done = await conn.run(paste.any_shell(authorized_keys_command(pub)), check=False)
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
            creds.asker.tell(_("Created %s (no passphrase).") % key_path)
        await install_public_key(conn, key_path)
        creds.asker.tell(_("Installed %s on %s: the next connect needs no password.")
                         % (key_path + ".pub", res.where()))
    except (OSError, asyncssh.Error, ConnectError) as exc:
        log.warning("key install failed: %s", exc)
        creds.asker.tell(_("Could not install your key: %s") % exc)
