"""A loopback TCP relay that adds a fixed delay, for the connect and transfer benches (issue 26).

    python bench/relay.py --to 127.0.0.1:PORT --rtt-ms 200    # prints "listening on PORT"

Each byte is delivered rtt_ms/2 after it arrived, in both directions, so one round trip through
the relay costs rtt_ms more than loopback. The relay reads eagerly and keeps what is in flight
(a long, fast link's bandwidth-delay product: 100 MB/s x 100 ms = 10 MB each way), so what
limits a transfer through it is the application's own window, as on a real long link with
well-tuned TCP buffers. It runs in its own process so its work is not the bench's."""

import argparse
import asyncio
import signal
import socket
import time

CHUNK = 1 << 18


async def pump(reader, writer, delay):
    queue = asyncio.Queue()

    async def feed():
        while True:
            data = await reader.read(CHUNK)
            queue.put_nowait((time.monotonic() + delay, data))
            if not data:
                return

    async def deliver():
        while True:
            due, data = await queue.get()
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                if writer.can_write_eof():
                    writer.write_eof()
                return
            writer.write(data)
            await writer.drain()

    try:
        await asyncio.gather(feed(), deliver())
    except (ConnectionError, OSError):
        pass


async def serve(host, port, rtt_ms, listen_port):
    delay = rtt_ms / 2000.0

    async def handle(c_reader, c_writer):
        try:
            s_reader, s_writer = await asyncio.open_connection(host, port)
        except OSError:
            c_writer.close()
            return
        for w in (c_writer, s_writer):
            sock = w.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            await asyncio.gather(pump(c_reader, s_writer, delay), pump(s_reader, c_writer, delay))
        except asyncio.CancelledError:  # the relay is stopping
            pass
        finally:
            for w in (c_writer, s_writer):
                w.close()

    server = await asyncio.start_server(handle, "127.0.0.1", listen_port)
    print("listening on %d" % server.sockets[0].getsockname()[1], flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    server.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--to", required=True, help="HOST:PORT to relay to")
    ap.add_argument("--rtt-ms", type=float, default=200, help="round-trip delay added (half each way)")
    ap.add_argument("--port", type=int, default=0, help="port to listen on (default: any free)")
    args = ap.parse_args()
    host, port = args.to.rsplit(":", 1)
    asyncio.run(serve(host, int(port), args.rtt_ms, args.port))


if __name__ == "__main__":
    main()
