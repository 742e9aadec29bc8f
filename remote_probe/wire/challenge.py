"""The direct path's proof: a daemon at a remembered socket path shows it is the one the
laptop met over the command path (issue 20).

The daemon keeps a random secret in its 0700 state dir and says it in its hello. The
laptop caches the secret only from a hello that came over the command path (where attach
checked the daemon's uid with SO_PEERCRED). On the direct path nobody on the box checks
the peer, so the laptop sends a nonce first and trusts nothing until the answer is
HMAC-SHA256(secret, nonce): a stranger's daemon at the same path (its /tmp dir deleted and
made again by another user) cannot answer. Stdlib only.
"""

from __future__ import annotations

import hashlib
import hmac
import os

PROVE_ID = "prove"  # the id of the one prove request, sent before anything else
NONCE_BYTES = 16
SECRET_BYTES = 32


def new_secret() -> str:
    return os.urandom(SECRET_BYTES).hex()


def new_nonce() -> str:
    return os.urandom(NONCE_BYTES).hex()


def proof(secret: str, nonce: str) -> str:
    """HMAC-SHA256(secret, nonce) in hex; both hex strings."""
    return hmac.new(bytes.fromhex(secret), bytes.fromhex(nonce), hashlib.sha256).hexdigest()


def is_hex(value: object, size: int) -> bool:
    if not isinstance(value, str) or len(value) != 2 * size:
        return False
    try:
        bytes.fromhex(value)
    except ValueError:
        return False
    return True


def proof_ok(secret: object, nonce: str, answer: object) -> bool:
    """The daemon's answer matches the secret cached for it (constant-time compare)."""
    if not is_hex(secret, SECRET_BYTES) or not isinstance(answer, str):
        return False
    return hmac.compare_digest(proof(str(secret), nonce), answer)
