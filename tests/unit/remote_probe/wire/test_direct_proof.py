"""The direct path's proof (wire/challenge.py) and the daemon's secret file."""

import os
import stat

from remote_probe import daemon_secret, wire

SECRET = "11" * 32


def test_only_the_secret_holder_answers_the_nonce():
    nonce = wire.challenge.new_nonce()
    answer = wire.challenge.proof(SECRET, nonce)
    assert wire.challenge.proof_ok(SECRET, nonce, answer)
    assert not wire.challenge.proof_ok(SECRET, nonce, wire.challenge.proof("22" * 32, nonce))
    assert not wire.challenge.proof_ok(SECRET, wire.challenge.new_nonce(), answer)  # a replay
    for bad in (None, "", "00" * 32, 42, answer.upper() + "x"):
        assert not wire.challenge.proof_ok(SECRET, nonce, bad)
    assert not wire.challenge.proof_ok(None, nonce, answer)  # nothing cached: never trusted


def test_the_secret_is_private_kept_and_never_read_through_a_link(tmp_path):
    state = str(tmp_path)
    first = daemon_secret.load_secret(state)
    path = os.path.join(state, daemon_secret.SECRET_FILE)
    assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600
    assert daemon_secret.load_secret(state) == first  # a daemon restart keeps it
    os.chmod(path, 0o644)  # readable by others: no longer a secret, replaced
    second = daemon_secret.load_secret(state)
    assert second != first and stat.S_IMODE(os.lstat(path).st_mode) == 0o600
    os.unlink(path)
    planted = tmp_path / "planted"
    planted.write_text("33" * 32)
    os.symlink(str(planted), path)  # someone's file behind a link: not ours to trust
    third = daemon_secret.load_secret(state)
    assert third != "33" * 32 and not os.path.islink(path)
