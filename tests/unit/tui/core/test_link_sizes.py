"""Downloads sized for long, fast links (issue 26)."""

import types

import pytest

from tui.core.transfer import download as transfer


def sftp_with(limit):
    return types.SimpleNamespace(limits=types.SimpleNamespace(max_read_len=limit))


@pytest.mark.parametrize("sftp,block", [
    (sftp_with(256 * 1024 - 1024), 256 * 1024 - 1024),  # OpenSSH's stated limit
    (sftp_with(4 << 20), transfer.BLOCK),  # a generous server: our block
    (sftp_with(16 << 10), transfer.BLOCK),  # asyncssh's placeholder: the server stated nothing
    (sftp_with(0), transfer.BLOCK),
    (object(), transfer.BLOCK),  # the probe channel has no limits
])
def test_read_block_follows_the_servers_stated_limit(sftp, block):
    assert transfer.read_block(sftp) == block


def test_window_and_requests_hold_a_300ms_100MBps_link():
    bdp = 100e6 * 0.300
    assert transfer.WINDOW >= bdp  # the channel lets that much be in flight
    openssh_block = transfer.read_block(sftp_with(256 * 1024 - 1024))
    sftp_in_flight = transfer.WINDOW // openssh_block * openssh_block
    assert sftp_in_flight >= bdp * 0.95  # and the SFTP requests keep it filled
    probe_in_flight = transfer.BLOCK * transfer.MAX_REQUESTS * transfer.READS_IN_FLIGHT
    assert probe_in_flight >= bdp * 0.95  # so do the probe channel's
    # the memory bounds stated in transfer.py
    assert transfer.WINDOW + 2 * transfer.CHUNK <= 48 << 20
    assert transfer.WINDOW + (transfer.READS_IN_FLIGHT + 1) * transfer.CHUNK <= 72 << 20
