"""Prompt ACKs for the probe's replies (issue 26: a warm `gputui status` waited 40 ms per
extra reply).

sshd sets TCP_NODELAY only on interactive sessions, so when the daemon answers two requests in a
row over a socket or exec channel, Nagle's algorithm holds the second answer until the first is
acknowledged, and Linux delays that ACK up to 40 ms when the laptop has nothing to send. Asking
for the ACK now each time a reply arrives while others are still awaited releases the next one
at once: tcp(7), TCP_QUICKACK sends an ACK that is due immediately."""

import socket
from typing import Any, Callable, Optional


def ack_now_for(conn: Any) -> Optional[Callable[[], None]]:
    """A function that sends the ACK due on `conn`'s TCP socket now; None where there is no
    such socket or option (macOS and Windows have no TCP_QUICKACK; a ProxyCommand's pipe, a
    ProxyJump tunnel)."""
    quickack = getattr(socket, "TCP_QUICKACK", None)
    try:
        sock = conn.get_extra_info("socket") if conn is not None else None
    except Exception:  # noqa: BLE001 - a connection already gone: nothing to speed up
        return None
    # asyncio hands out a TransportSocket (setsockopt, family, type), not the socket itself
    if quickack is None or not hasattr(sock, "setsockopt") or \
            getattr(sock, "family", None) not in (socket.AF_INET, socket.AF_INET6) or \
            getattr(sock, "type", None) != socket.SOCK_STREAM:
        return None

    def ack_now() -> None:
        try:
            sock.setsockopt(socket.IPPROTO_TCP, quickack, 1)
        except OSError:  # closed meanwhile: the reply loop notices on its own
            pass
    return ack_now
