"""The probe-channel push requests (file_stat .. file_list) are held to their schemas like
every other request: a hostile field is refused with a reason, by the laptop before it sends,
by the daemon, and by the attach bridge (filexfer_write.handle) that answers them alone."""

import base64
import hashlib

import pytest

from remote_probe import wire
from remote_probe.files import filexfer_write

CHUNK = b"x" * wire.MAX_CHUNK
GOOD = [
    {"type": wire.FILE_STAT, "root": "/data", "paths": ["a", "b/c"]},
    {"type": wire.FILE_STAT, "root": "~/d", "paths": ["f"] * filexfer_write.STAT_BATCH},
    {"type": wire.FILE_MKDIR, "root": "/data", "path": ""},
    {"type": wire.FILE_LINK, "root": "/data", "path": "l", "target": "../x"},
    {"type": wire.FILE_WRITE, "root": "/data", "path": "a.gputui-part", "offset": 0, "truncate": True,
     "data": base64.b64encode(CHUNK).decode(), "sha256": hashlib.sha256(CHUNK).hexdigest()},
    {"type": wire.FILE_COMMIT, "root": "/data", "path": "a.gputui-part", "to": "a", "size": 3,
     "mode": 0o755, "mtime": 1.7e9},
    {"type": wire.FILE_COMMIT, "root": "/data", "path": "a.gputui-part", "to": "a", "discard": True},
    {"type": wire.FILE_LIST, "root": "/data"},
]


@pytest.mark.parametrize("msg", GOOD, ids=lambda m: m["type"])
def test_what_push_sends_passes(msg):
    assert wire.check_request(msg) is None


DEEP: list = ["deep"]
for _ in range(64):
    DEEP = [DEEP]
HOSTILE = [
    ({"type": wire.FILE_STAT, "root": 7, "paths": []}, "root"),
    ({"type": wire.FILE_STAT, "root": "/d", "paths": "a"}, "paths"),
    ({"type": wire.FILE_STAT, "root": "/d", "paths": [{"x": 1}]}, "paths[0]"),
    ({"type": wire.FILE_STAT, "root": "/d", "paths": ["f"] * (filexfer_write.STAT_BATCH + 1)}, "paths"),
    ({"type": wire.FILE_MKDIR, "root": "/d", "path": "a" * 9000}, "path"),
    ({"type": wire.FILE_LINK, "root": "/d", "path": "l", "target": ["x"]}, "target"),
    ({"type": wire.FILE_WRITE, "root": "/d", "path": "a.gputui-part", "offset": -1, "data": ""}, "offset"),
    ({"type": wire.FILE_WRITE, "root": "/d", "path": "a.gputui-part", "offset": True, "data": ""}, "offset"),
    ({"type": wire.FILE_WRITE, "root": "/d", "path": "a.gputui-part", "offset": 1.5, "data": ""}, "offset"),
    ({"type": wire.FILE_WRITE, "root": "/d", "path": "a.gputui-part", "offset": 0,
      "data": "A" * (4 * ((wire.MAX_CHUNK + 2) // 3) + 4)}, "data"),
    ({"type": wire.FILE_WRITE, "root": "/d", "path": "a.gputui-part", "offset": 0, "data": "",
      "truncate": "yes"}, "truncate"),
    ({"type": wire.FILE_WRITE, "root": "/d", "path": "a.gputui-part", "offset": 0, "data": "",
      "sha256": "0" * 65}, "sha256"),
    ({"type": wire.FILE_COMMIT, "root": "/d", "path": "p", "to": "a", "size": float("nan")}, "size"),
    ({"type": wire.FILE_COMMIT, "root": "/d", "path": "p", "to": "a", "mode": 0o104755 << 3}, "mode"),
    ({"type": wire.FILE_COMMIT, "root": "/d", "path": "p", "to": "a", "mtime": float("inf")}, "mtime"),
    ({"type": wire.FILE_COMMIT, "root": "/d", "path": "p", "to": 3}, "to"),
    ({"type": wire.FILE_LIST, "root": "/d", "extra": DEEP}, "extra"),
]


@pytest.mark.parametrize("msg,field", HOSTILE, ids=lambda v: v if isinstance(v, str) else v["type"])
def test_a_hostile_field_is_refused_and_named(msg, field):
    why = wire.check_request(msg)
    assert why is not None and why.startswith("bad %s request" % msg["type"]), why
    assert "." + field in why, why


def test_the_bridge_refuses_before_touching_the_disk(tmp_path):
    target = tmp_path / "d"
    reply = filexfer_write.handle({"type": wire.FILE_MKDIR, "id": 5, "root": str(target), "path": ["x"]})
    assert reply["type"] == "error" and reply["id"] == 5 and "bad file_mkdir request" in reply["error"]
    assert not target.exists()
    data = b"hello"
    reply = filexfer_write.handle({"type": wire.FILE_WRITE, "id": 6, "root": str(tmp_path), "path": "a.gputui-part",
                                   "offset": -5, "data": base64.b64encode(data).decode(),
                                   "sha256": hashlib.sha256(data).hexdigest(), "truncate": True})
    assert reply["type"] == "error" and "offset" in reply["error"]
    assert not (tmp_path / "a.gputui-part").exists()
