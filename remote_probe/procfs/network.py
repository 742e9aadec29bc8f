"""Network throughput from /proc/net/dev counters."""

import time

from remote_probe.procfs.reader import PROC, read_text


def parse_net_dev(text):
    """-> (rx_bytes, tx_bytes) summed over interfaces other than loopback."""
    rx = tx = 0
    for line in text.splitlines()[2:]:
        name, _, rest = line.partition(":")
        name = name.strip()
        if not rest or name == "lo":
            continue
        parts = rest.split()
        if len(parts) >= 9:
            rx += int(parts[0])
            tx += int(parts[8])
    return rx, tx


class NetMeter:
    def __init__(self, path=PROC + "/net/dev"):
        self.path = path
        self.prev = None

    def read(self, now=None):
        now = time.monotonic() if now is None else now
        text = read_text(self.path, None)
        if text is None:  # no /proc/net/dev (macOS): not available, not "0 B/s"
            self.prev = None
            return {"rx_bps": None, "tx_bps": None}
        rx, tx = parse_net_dev(text)
        prev, self.prev = self.prev, (now, rx, tx)
        if prev is None or now <= prev[0]:
            return {"rx_bps": None, "tx_bps": None}
        dt = now - prev[0]
        return {"rx_bps": max(0, int((rx - prev[1]) / dt)),
                "tx_bps": max(0, int((tx - prev[2]) / dt))}
