"""How much each SSH channel and transfer keeps in flight; apart from tui.core.transfer.download so that
the connection, which every command opens, sets its window without loading the transfer code."""

# Sized for long, fast links (issue 26): a 300 ms, 100 MB/s link holds ~30 MB in flight (its
# bandwidth-delay product), and a transfer is capped at window / RTT (asyncssh's default 2 MiB
# window: 7 MB/s at 300 ms). Every SSH channel gets WINDOW/MAX_PKTSIZE (tui/remote/ssh/connect.py
# sets them on the connection); an SFTP download keeps WINDOW // BLOCK single-block requests in
# flight, the probe channel READS_IN_FLIGHT read calls of CHUNK (each its own pipelined chunks).
# Memory bound, per download: the WINDOW of answers the box may have sent and we have not taken;
# each block is written and hashed as it comes and then dropped, so nothing queues beside it:
# 32 MiB at most (the probe channel: WINDOW + READS_IN_FLIGHT x CHUNK + CHUNK = 72 MiB). Loopback
# is not slowed: the window only lets the box send sooner.
# An SFTP download asks for only the link's bandwidth-delay product at once (issue 38:
# tui.core.transfer.download.reads_in_flight, from the open's round trip): MIN_READS blocks on
# loopback or a LAN, where a laptop busy decrypting let the box's answers pile up in its memory.
WINDOW = 32 << 20  # bytes a channel lets the box send before we read (the BDP of 300 ms x 100 MB/s)
MAX_PKTSIZE = 256 << 10  # bytes per channel data packet: fewer packets for Python to handle
BLOCK = 256 << 10  # bytes per SFTP request: OpenSSH's sftp-server accepts 256 KiB
CHUNK = 8 << 20  # bytes per probe-channel read call
SINK_BYTES = 1 << 20  # bytes between a download's progress calls
LINK_RATE = 256e6  # bytes/s an SFTP download plans for: its reads in flight = LINK_RATE x RTT
MIN_READS = 8  # SFTP reads in flight at least (2 MiB: loopback at full speed)
READS_IN_FLIGHT = 4  # probe-channel read calls outstanding at once, so its pipe never drains
MAX_REQUESTS = CHUNK // BLOCK  # probe-channel chunks in flight per read call
SFTP_OPTIONS = {"block_size": BLOCK, "max_requests": MAX_REQUESTS}
