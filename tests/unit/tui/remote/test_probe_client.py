"""The client side of the protocol: malformed probe output is skipped, never fatal."""

import asyncio
import json

import pytest

from remote_probe import wire
from tui.remote.probe.client import ProbeClient, ProbeError


class Writer:
    def __init__(self):
        self.lines = []

    def write(self, data):
        self.lines.append(json.loads(data))

    def write_eof(self):
        pass


def feed(reader, *lines):
    for line in lines:
        reader.feed_data(line if isinstance(line, bytes) else wire.encode(line))


async def test_banner_and_garbage_are_skipped_and_requests_still_work():
    reader, writer, pushed = asyncio.StreamReader(), Writer(), []
    client = ProbeClient(reader, writer, on_push=pushed.append)
    feed(reader, b"Welcome to AutoDL! (a chatty .bashrc)\n",
         wire.hello("probe", "0.1.0", ["samples"], pid=1))
    await client.start()
    assert client.skipped == 1 and writer.lines[0]["type"] == "hello"
    task = asyncio.ensure_future(client.request(wire.PING))
    await asyncio.sleep(0)
    rid = writer.lines[-1]["id"]
    feed(reader, b"{not json\n", b'{"type":"sample","seq":"x","t":1}\n', b"\xff\xfe\n",
         {"type": "sample", "seq": 5, "t": 1.0, "gpus": [], "procs": [], "host": {}},
         {"type": "reply", "id": rid, "t": 2.0})
    reply = await asyncio.wait_for(task, 2)
    assert reply["t"] == 2.0
    assert client.skipped == 4  # banner + 3 bad lines, counted; the connection went on
    assert [m["seq"] for m in pushed] == [5]


async def test_incompatible_probe_is_refused_with_a_reason():
    reader, writer = asyncio.StreamReader(), Writer()
    client = ProbeClient(reader, writer)
    feed(reader, dict(wire.hello("probe", "9.0", []), protocol=wire.PROTOCOL + 1))
    with pytest.raises(ProbeError, match="redeployed"):
        await client.start()


async def test_lost_channel_fails_pending_requests():
    reader, writer = asyncio.StreamReader(), Writer()
    client = ProbeClient(reader, writer)
    feed(reader, wire.hello("probe", "0.1.0", []))
    await client.start()
    task = asyncio.ensure_future(client.request(wire.PING))
    await asyncio.sleep(0)
    reader.feed_eof()
    with pytest.raises(ProbeError, match="lost"):
        await asyncio.wait_for(task, 2)


async def test_probe_error_reply_becomes_probe_error():
    reader, writer = asyncio.StreamReader(), Writer()
    client = ProbeClient(reader, writer)
    feed(reader, wire.hello("probe", "0.1.0", []))
    await client.start()
    task = asyncio.ensure_future(client.request(wire.TMUX_KILL, session="$9"))
    await asyncio.sleep(0)
    feed(reader, {"type": "error", "id": writer.lines[-1]["id"], "error": "can't find session: $9"})
    with pytest.raises(ProbeError, match="can't find session"):
        await asyncio.wait_for(task, 2)


async def test_requests_sent_together_all_leave_before_any_reply():
    """`status` asks for the snapshot and the price at once: one round trip, not two
    (issue 26); each reply still finds its request, in whatever order the box answers."""
    reader, writer = asyncio.StreamReader(), Writer()
    client = ProbeClient(reader, writer)
    feed(reader, wire.hello("probe", "0.1.0", []))
    await client.start()
    snap, price = client.send(wire.SNAPSHOT), client.send(wire.PROVIDER_PRICE)
    assert [m["type"] for m in writer.lines[1:]] == [wire.SNAPSHOT, wire.PROVIDER_PRICE]
    feed(reader, {"type": "error", "id": price.rid, "error": "no provider here"},
         {"type": "reply", "id": snap.rid, "inventory": {}})
    assert (await client.reply(snap, timeout=2))["inventory"] == {}
    with pytest.raises(ProbeError, match="no provider here"):
        await client.reply(price, timeout=2)
    assert client.pending == {}


async def test_a_dropped_request_leaves_no_unread_error_when_the_channel_goes():
    loop = asyncio.get_running_loop()
    seen = []
    loop.set_exception_handler(lambda _loop, ctx: seen.append(ctx))
    reader, writer = asyncio.StreamReader(), Writer()
    client = ProbeClient(reader, writer)
    feed(reader, wire.hello("probe", "0.1.0", []))
    await client.start()
    sent = client.send(wire.PROVIDER_PRICE)
    reader.feed_eof()
    await asyncio.wait_for(client.closed.wait(), 2)
    client.drop(sent)
    del sent
    import gc
    gc.collect()
    await asyncio.sleep(0)
    assert not [c for c in seen if "never retrieved" in c.get("message", "")], seen


async def test_a_reply_while_others_are_awaited_asks_for_the_ack_at_once():
    """sshd's Nagle holds the daemon's next answer until the laptop acknowledges the last
    one, which Linux delays by up to 40 ms (tui.remote.tcp_ack): a warm `status` paid it per
    extra reply. The ACK is asked for only while more replies are due."""
    reader, writer, acks = asyncio.StreamReader(), Writer(), []
    client = ProbeClient(reader, writer)
    client.ack_now = lambda: acks.append(len(client.pending))
    feed(reader, wire.hello("probe", "0.1.0", []))
    await client.start()
    snap, price = client.send(wire.SNAPSHOT), client.send(wire.PROVIDER_PRICE)
    feed(reader, {"type": "reply", "id": price.rid, "price": None})
    await client.reply(price, timeout=2)
    assert acks == [1]  # the snapshot is still due: ACK now
    feed(reader, {"type": "reply", "id": snap.rid, "inventory": {}})
    await client.reply(snap, timeout=2)
    assert acks == [1]  # nothing more is due: no extra system call


def test_ack_now_only_for_a_tcp_socket():
    import socket

    from tui.remote.tcp_ack import ack_now_for

    class Conn:
        def __init__(self, sock):
            self.sock = sock

        def get_extra_info(self, name):
            return self.sock if name == "socket" else None

    assert ack_now_for(None) is None
    assert ack_now_for(Conn(None)) is None  # a ProxyCommand's pipe: no socket
    a, b = socket.socketpair()  # AF_UNIX: no TCP ACK to speed up
    with a, b:
        assert ack_now_for(Conn(a)) is None
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    with server, socket.create_connection(server.getsockname()) as tcp:
        ack = ack_now_for(Conn(tcp))
        if not hasattr(socket, "TCP_QUICKACK"):  # macOS, Windows
            assert ack is None
        else:
            ack()  # sets the option; no error on a live connection
            assert tcp.getsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK) in (0, 1)
    if ack is not None:
        ack()  # a closed socket: swallowed, the reply loop notices on its own


@pytest.mark.parametrize("said,seq", [(1234, 1234), (0, 0), (None, 0), ("9", 0), (True, 0), (-3, 0),
                                      (1 << 60, 0)])
async def test_hello_seq_is_a_subscribe_may_name(said, seq):
    """push/pull subscribe from the daemon's last sample (issue 38: no replay of hours of them);
    a hello that says no usable seq replays as before (since 0), never a request the wire refuses."""
    client = ProbeClient(asyncio.StreamReader(), Writer(), on_push=None)
    client.hello = {"type": "hello", "last_seq": said}
    assert client.hello_seq() == seq
    assert wire.check_request({"type": wire.SUBSCRIBE, "since_seq": client.hello_seq(), "id": 1}) is None
