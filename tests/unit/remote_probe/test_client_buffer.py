"""The daemon's limit on one client's unread bytes (server.SocketServer.send): a client that
stopped reading is dropped, but the backlog it asked for at subscribe is not held against it
(issue h15: an hour of an 8-GPU box, 8 MB, got a laptop that was reading dropped at once)."""

from remote_probe import server
from remote_probe.server import CLIENT_BUFFER_LIMIT, Client, SocketServer

MB = 1 << 20


class Writer:
    """A stream writer whose peer reads only when the test says so."""

    def __init__(self):
        self.queued = 0
        self.closed = False
        self.transport = self

    def get_write_buffer_size(self):
        return self.queued

    def write(self, data):
        self.queued += len(data)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def is_closing(self):
        return self.closed

    def close(self):
        self.closed = True

    def peer_reads(self, n):
        self.queued = max(0, self.queued - n)


def subscribed_with(backlog_mb):
    srv, writer = SocketServer({}, dict), Writer()
    client = Client(None, writer)
    srv.send_backlog(client, [b"x" * (MB // 2)] * (2 * backlog_mb))
    return srv, client, writer


def tick(srv, client, size=2400):
    srv.send(client, line=b"s" * size)


def test_a_backlog_over_the_limit_is_kept_while_the_client_reads_it():
    srv, client, writer = subscribed_with(3 * CLIENT_BUFFER_LIMIT // MB)  # 12 MB
    for _ in range(20):  # a slow link: samples go on while the backlog is read down
        tick(srv, client)
        writer.peer_reads(MB)
        assert not writer.closed
    assert writer.queued < CLIENT_BUFFER_LIMIT
    tick(srv, client)
    assert client.backlog_owed == 0  # read down: the plain limit applies again


def test_a_client_that_stops_reading_after_its_backlog_is_still_dropped():
    srv, client, writer = subscribed_with(8)
    while not writer.closed:  # it reads nothing: dropped past the limit plus its backlog
        tick(srv, client, size=64 * 1024)
    assert CLIENT_BUFFER_LIMIT + 8 * MB < writer.queued <= CLIENT_BUFFER_LIMIT + 8 * MB + 64 * 1024


def test_the_plain_limit_holds_once_the_backlog_was_read():
    srv, client, writer = subscribed_with(8)
    writer.peer_reads(8 * MB)
    tick(srv, client)
    while not writer.closed:
        tick(srv, client, size=64 * 1024)
    assert CLIENT_BUFFER_LIMIT < writer.queued <= CLIENT_BUFFER_LIMIT + 64 * 1024
    assert server.CLIENT_BUFFER_LIMIT == 4 * MB  # the figures above are sized for it
