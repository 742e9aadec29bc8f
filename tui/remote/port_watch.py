"""During a reconnect's backoff wait: notice at once when the box's sshd accepts again.

Probing the TCP port every 0.5 s is nearly free and gets live data back within a second of
the link returning instead of at the next backoff step. Not used through a ProxyJump or
ProxyCommand, where the port is not ours to probe."""

import asyncio

EVERY = 0.5  # seconds between two probes of the port


async def sshd_back(target, was_down):
    """True once sshd accepts a connection after it refused one (at the first that accepts
    with `was_down`); None at once where the port cannot be watched. Runs until then: the
    caller cancels it when the backoff ends first."""
    try:
        options = target.options()
    except Exception:  # noqa: BLE001 - no watch, plain backoff
        return None
    if options.tunnel or options.proxy_command:
        return None
    while True:
        await asyncio.sleep(EVERY)
        try:
            _, writer = await asyncio.wait_for(
                asyncio.open_connection(options.host, options.port or 22), 1.0)
            writer.close()
            if was_down:
                return True
        except (OSError, asyncio.TimeoutError):
            was_down = True
