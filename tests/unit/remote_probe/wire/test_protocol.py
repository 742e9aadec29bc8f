import os
import json

import os
import pytest

from remote_probe import wire
from remote_probe.wire import ProtocolError


def sample(**over):
    msg = {"type": "sample", "seq": 3, "t": 1.5,
           "gpus": [[50, 20, 1000, 60, 200, 1400, 1500, 0, None, 0, 0]],
           "procs": [[10, 0, 512, 5, 100, 0]], "host": {}}
    msg.update(over)
    return msg


def test_roundtrip_is_one_compact_line():
    line = wire.encode(sample())
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert b": " not in line and b", " not in line
    assert wire.decode(line) == sample()


@pytest.mark.parametrize("line, why", [
    (b"not json", "not JSON"),
    (b"[1,2]", "not an object"),
    (b'{"seq": 1}', "missing type"),
    (b'{"type": "bogus"}', "unknown message type"),
    (b'{"type": "hello", "version": "1"}', "hello without protocol"),
    (json.dumps(sample(seq="3")).encode(), "sample without seq"),
    (json.dumps(sample(gpus=[[1, 2]])).encode(), "bad gpu row"),
    (json.dumps(sample(procs=[[1]])).encode(), "bad proc row"),
    (b'{"type": "reply"}', "reply without id"),
    (b"\xff\xfe{}", "not UTF-8"),
    (b"   \n", "empty line"),
    (b'{"type":"ping","pad":"' + b"x" * wire.MAX_LINE + b'"}', "line too long"),
])
def test_malformed_lines_are_rejected_with_a_reason(line, why):
    with pytest.raises(ProtocolError, match=why):
        wire.decode(line)


def test_incompatible_protocol_is_explained():
    ok = wire.hello("probe", "1", [])
    assert wire.check_compatible(ok) is None
    old = dict(ok, protocol=wire.PROTOCOL + 1)
    assert "redeployed" in wire.check_compatible(old)


@pytest.mark.parametrize("kind, local, flags", [
    ("C", 1, 0), ("G", 1, wire.PROC_GRAPHICS), ("C", 0, wire.PROC_HOST_PID),
    ("?", 1, wire.PROC_FD_ONLY),
])
def test_process_rows_carry_kind_and_namespace_as_flags(kind, local, flags):
    row = wire.proc_row({"pid": 5, "gpu": 1, "gpu_mem": None, "kind": kind, "local": local,
                         "cpu": 12.6, "rss": 40, "ppid": 3})
    assert row == [5, 1, None, 13, 40, flags, 3]
    back = wire.proc_dict(row)
    assert (back["kind"], back["local"]) == (kind, local)


def test_throttle_mask_decodes_to_names():
    assert wire.throttle_names(0x4 | 0x40) == ["power cap", "hw thermal"]
    assert wire.throttle_names(None) == []


def test_a_whole_file_chunk_survives_the_clients_cleaning():
    """Downloads without SFTP read 256-512 KiB chunks as base64 in a reply; the string cap
    for box text once cut them, so every chunk came back a quarter short."""
    import base64

    from remote_probe.files import filexfer
    data = os.urandom(filexfer.MAX_CHUNK)
    line = wire.encode({"type": wire.REPLY, "id": 7, "eof": False, "file_size": len(data),
                        "data": base64.b64encode(data).decode("ascii")})
    report = wire.Report()
    msg = wire.decode_clean(line, report)
    assert base64.b64decode(msg["data"]) == data and report.count == 0
