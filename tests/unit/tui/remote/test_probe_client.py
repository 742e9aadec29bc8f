"""The client side of the protocol: malformed probe output is skipped, never fatal."""

import asyncio
import json

import pytest

from remote_probe import wire
from tui.remote.probe_client import ProbeClient, ProbeError


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
