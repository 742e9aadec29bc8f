"""The daemon's secret for the direct path's proof (wire/challenge.py): kept in the 0700
state dir, created race-free, answered to a `prove` request (handlers.py registers it)."""

import errno
import os
import stat

from remote_probe import wire
from remote_probe.server import RequestError

SECRET_FILE = "daemon-secret"


def load_secret(state_dir):
    """The secret (hex), made once per state dir: O_EXCL|O_NOFOLLOW, 0600, ours only. A
    file that is not a regular file of ours with our mode is replaced, never trusted."""
    path = os.path.join(state_dir, SECRET_FILE)
    for _ in range(3):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError as exc:
            if exc.errno != errno.ENOENT:  # e.g. a symlink (ELOOP): not ours to follow
                _remove(path)
            secret = _create(path)
            if secret:
                return secret
            continue  # another daemon start made it first: read theirs
        try:
            st = os.fstat(fd)
            data = os.read(fd, 256).decode("ascii", "replace").strip()
        finally:
            os.close(fd)
        if (stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid()
                and not st.st_mode & 0o077 and wire.challenge.is_hex(data, wire.challenge.SECRET_BYTES)):
            return data
        _remove(path)
    raise OSError("cannot keep a private secret in %s" % state_dir)


def _remove(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def _create(path):
    secret = wire.challenge.new_secret()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return None
    with os.fdopen(fd, "w") as f:
        f.write(secret + "\n")
    return secret


async def on_prove(daemon, client, msg):
    nonce = msg.get("nonce")
    if not wire.challenge.is_hex(nonce, wire.challenge.NONCE_BYTES):
        raise RequestError("prove: the nonce must be %d hex bytes" % wire.challenge.NONCE_BYTES)
    return {"proof": wire.challenge.proof(daemon.secret, nonce)}
