"""How much each SSH channel and transfer keeps in flight; apart from tui.core.transfer.download so that
the connection, which every command opens, sets its window without loading the transfer code."""

# Sized for long, fast links (issue 26): a 300 ms, 100 MB/s link holds ~30 MB in flight (its
# bandwidth-delay product), and a transfer is capped at window / RTT (asyncssh's default 2 MiB
# window: 7 MB/s at 300 ms). Every SSH channel gets WINDOW/MAX_PKTSIZE (tui/remote/ssh/connect.py
# sets them on the connection); an SFTP download keeps WINDOW // BLOCK single-block requests in
# flight, the probe channel READS_IN_FLIGHT read calls of CHUNK (each its own pipelined chunks).
# Memory bound, per download: the WINDOW of answers the box may have sent and we have not taken,
# plus one CHUNK of blocks being gathered and one being hashed/written: 32 + 8 + 8 = 48 MiB at
# most (the probe channel: WINDOW + READS_IN_FLIGHT x CHUNK + CHUNK = 72 MiB). Loopback is not
# slowed: the window only lets the box send sooner.
WINDOW = 32 << 20  # bytes a channel lets the box send before we read (the BDP of 300 ms x 100 MB/s)
MAX_PKTSIZE = 256 << 10  # bytes per channel data packet: fewer packets for Python to handle
BLOCK = 256 << 10  # bytes per SFTP request: OpenSSH's sftp-server accepts 256 KiB
CHUNK = 8 << 20  # bytes handed to the disk and the hash at once; bytes per probe-channel read call
READS_IN_FLIGHT = 4  # probe-channel read calls outstanding at once, so its pipe never drains
MAX_REQUESTS = CHUNK // BLOCK  # probe-channel chunks in flight per read call
SFTP_OPTIONS = {"block_size": BLOCK, "max_requests": MAX_REQUESTS}
