"""The wire boundary: every line from the box is decoded, validated and held to its
schema; nothing the box sends can raise anything but a counted, skipped line."""

import asyncio
import json
import math
import os

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from remote_probe import wire
from tui.remote.probe.client import ProbeClient, boundary_notice


def sample(**over):
    msg = {"type": "sample", "seq": 3, "t": 1700000000.0,
           "gpus": [[50, 20, 1024, 60, 250, 1410, 1593, 0, 30, 4, 0]],
           "procs": [[100, 0, 512, 95, 2048, 0, 1]], "host": {"cpu": 12.5, "load": [1.0, 0.5, 0.2]}}
    msg.update(over)
    return msg


# ---------------------------------------------------------------- encode
def test_a_file_name_that_is_not_utf8_round_trips_byte_exact():
    raw = b"/data/ckpt-\xff\xfe-\xc3(.pt"
    name = os.fsdecode(raw)  # what os.scandir hands the probe: lone surrogates
    line = wire.encode({"type": "reply", "id": 1, "facts": {"files": [{"path": name}]}})
    line.decode("ascii")  # the wire stays valid text
    back = wire.decode(line)["facts"]["files"][0]["path"]
    assert back == name and os.fsencode(back) == raw
    # ...and the laptop asking for it again sends the very same bytes back to the box
    request = wire.decode(wire.encode({"type": "sha256", "id": 2, "paths": [back]}))
    assert os.fsencode(request["paths"][0]) == raw


def test_encode_writes_strict_json_even_for_nan_from_a_driver():
    line = wire.encode({"type": "sample", "seq": 1, "t": 1.0, "gpus": [[float("nan")] * 11],
                        "host": {"cpu": float("inf")}})

    def refuse(name):
        raise AssertionError("non-JSON constant %s on the wire" % name)
    msg = json.loads(line, parse_constant=refuse)
    assert msg["gpus"][0][0] is None and msg["host"]["cpu"] is None


def test_non_ascii_text_stays_compact_utf8():
    line = wire.encode({"type": "reply", "id": 1, "name": "训练 ☃"})
    assert "训练 ☃".encode() in line


# ---------------------------------------------------------------- decode
@pytest.mark.parametrize("line, why", [
    (b"[" * 200000 + b"\n", "nested too deeply"),
    (b'{"type":"reply","id":1,"x":' + b"[" * 100000 + b"]" * 100000 + b"}\n", "nested too deeply"),
    (b"\xff\xfe\n", "not UTF-8"),
    (b"{not json\n", "not JSON"),
    (b'{"type":"sample","seq":1,"t":1,"gpus":[[1]],"procs":[],"host":{}}\n', "bad gpu row"),
    (b'{"type":"sample","seq":-1,"t":1}\n', "without seq"),
    (b'{"type":"sample","seq":1,"t":1e300}\n', "sane time"),
    (b'{"type":"sample","seq":true,"t":1}\n', "without seq"),
    (b'{"type":"hello","protocol":1.5,"version":"x"}\n', "without protocol"),
    (b'{"type":"sample","seq":1,"t":1,"x":' + b"9" * 5000 + b"}\n", "not JSON"),
    (b"x" * (wire.MAX_LINE + 1), "too long"),
])
def test_bad_lines_are_protocol_errors_never_anything_else(line, why):
    with pytest.raises(wire.ProtocolError, match=why):
        wire.decode_clean(line)


def test_nan_infinity_and_overflow_read_as_not_available():
    line = (b'{"type":"sample","seq":1,"t":1,"gpus":[[NaN,Infinity,-Infinity,1e999,1,1,1,1,1,1,1]],'
            b'"procs":[],"host":{}}\n')
    report = wire.Report()
    msg = wire.decode_clean(line, report)
    assert msg["gpus"][0][:4] == [None, None, None, None]
    assert report.count == 4 and report.examples[0] == "line: NaN is not a number"


def test_values_of_the_wrong_type_or_range_are_cleared_and_counted():
    report = wire.Report()
    msg = wire.clean(sample(
        gpus=[[150, "x", -5, 60, 250, 1410, 1593, 3.5, 30, True, 0]],
        procs=[[100, 0, 512, 95, 2048, 0, 1], ["pid", 0, 1, 1, 1, 0, 1], [7, 0, 1, 1, 1]],
        host={"cpu": -3, "load": [1.0, "high", None], "disks": [{"mount": 5, "total": 1e30}, "x"]},
        jobs={"tmux": {"sessions": [{"id": "$1", "name": ["not", "a", "name"], "windows": "no"}]},
              "unprotected": [{"pid": 9, "cmd": "x" * 10000}]},
        gpu_error={"nested": "object"}), report)
    assert msg["gpus"][0] == [None, None, None, 60, 250, 1410, 1593, None, 30, None, 0]
    assert msg["procs"] == [[100, 0, 512, 95, 2048, 0, 1]]  # no pid / too narrow: dropped
    assert msg["host"]["cpu"] is None and msg["host"]["load"] == [1.0, None, None]
    assert msg["host"]["disks"] == [{"mount": None, "total": None}]
    session = msg["jobs"]["tmux"]["sessions"][0]
    assert session["name"] is None and session["windows"] == []
    assert len(msg["jobs"]["unprotected"][0]["cmd"]) == 4096
    assert msg["gpu_error"] is None
    assert report.count == 17 and len(report.examples) == wire.Report.EXAMPLES
    assert report.examples[0].startswith("sample.gpus[0].util:")


def test_times_a_clock_cannot_show_are_cleared():
    report = wire.Report()
    msg = wire.clean({"type": "autostop", "event": "armed", "status": {
        "armed": {"command": "x", "deadline": 1e300, "armed_at": -5}, "grace_left": float("inf"),
        "idle_for": 12.0}}, report)
    assert msg["status"]["armed"]["deadline"] is None and msg["status"]["armed"]["armed_at"] is None
    assert msg["status"]["grace_left"] is None and msg["status"]["idle_for"] == 12.0
    assert report.count == 3


def test_a_good_sample_passes_unchanged():
    report = wire.Report()
    assert wire.clean(sample(), report) == sample() and report.count == 0


def test_rows_are_capped_with_an_and_n_more_count():
    rows = [[1000 + i, 0, i, 0, 1, 0] for i in range(50000)]
    kept, more = wire.cap_procs([{"pid": r[0], "gpu_mem": r[2]} for r in rows])
    assert len(kept) == wire.MAX_PROC_ROWS and more == 50000 - wire.MAX_PROC_ROWS
    assert kept[0]["gpu_mem"] == 49999  # the biggest users of GPU memory are kept
    assert wire.cap_procs(kept[:3]) == (kept[:3], 0)  # under the bound: as is
    # a probe that does not cap is cut by the client to the same bound
    report = wire.Report()
    msg = wire.clean(sample(procs=rows[:2000]), report)
    assert len(msg["procs"]) == wire.MAX_PROC_ROWS and report.count == 1


def test_nesting_beyond_the_bound_is_cut_not_followed():
    deep = "leaf"
    for _ in range(200):
        deep = {"d": deep}
    report = wire.Report()
    msg = wire.clean({"type": "reply", "id": 1, "facts": deep}, report)
    assert depth(msg) <= wire.MAX_DEPTH + 1 and report.count == 1


def test_readers_of_rows_tolerate_cleared_values():
    row = [5, 0, None, None, None, None]
    assert wire.proc_dict(row)["kind"] == "C"
    assert wire.idle_inputs({"gpus": [[None] * 11], "procs": [row], "procs_more": 3}) == ([None], 4)
    assert wire.throttle_names(None) == [] and wire.throttle_names("0x4") == []
    assert wire.throttle_names(4) == ["power cap"]


def test_the_notice_is_one_plain_sentence():
    assert boundary_notice(0, 0) is None
    text = boundary_notice(2, 1, "not JSON: x", ["sample.gpus[0].util: 'x'"])
    assert text.startswith("The probe sent data gputui could not use: skipped 2 malformed lines")
    assert "cleared 1 bad value (e.g. sample.gpus[0].util" in text and "\n" not in text


# ---------------------------------------------------------------- the client end
class Writer:
    def __init__(self):
        self.lines = []

    def write(self, data):
        self.lines.append(json.loads(data))

    def write_eof(self):
        pass


async def started_client(pushed):
    reader, writer = asyncio.StreamReader(), Writer()
    client = ProbeClient(reader, writer, on_push=pushed.append)
    reader.feed_data(wire.encode(wire.hello("probe", "0.1.0", ["samples"], pid=1)))
    await client.start()
    return client, reader, writer


async def ping(client, reader, writer):
    task = asyncio.ensure_future(client.request(wire.PING))
    await asyncio.sleep(0)
    reader.feed_data(wire.encode({"type": "reply", "id": writer.lines[-1]["id"], "t": 1.0}))
    return await asyncio.wait_for(task, 2)


async def test_a_deeply_nested_line_is_skipped_and_the_link_stays():
    pushed = []
    client, reader, writer = await started_client(pushed)
    reader.feed_data(b'{"type":"sample","seq":1,"t":1,"host":' + b"[" * 50000 + b"\n")
    reader.feed_data(wire.encode(sample(gpus=[[float("nan")] + [1] * 10])))
    assert (await ping(client, reader, writer))["t"] == 1.0
    assert not client.closed.is_set()
    assert client.skipped == 1 and client.cleaned.count == 0  # encode() wrote null, not NaN
    assert pushed[0]["gpus"][0][0] is None
    first = client.take_notice()
    assert "skipped 1 malformed line (last: nested too deeply)" in first
    assert client.take_notice() is None  # shown once


# ---------------------------------------------------------------- property tests
json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True),
                      st.text(max_size=20))
json_value = st.recursive(json_leaf, lambda kids: st.one_of(
    st.lists(kids, max_size=5), st.dictionaries(st.text(max_size=8), kids, max_size=5)),
    max_leaves=40)
field_names = st.sampled_from(["gpus", "procs", "host", "jobs", "dl", "procs_more", "inventory",
                               "sample", "proc_meta", "gpu_error", "id", "seq", "t", "status"])
message = st.fixed_dictionaries(
    {"type": st.sampled_from(sorted(wire.PUSH_TYPES | wire.REPLY_TYPES | {"hello", "x"}))},
    optional={"id": json_value, "seq": st.one_of(st.integers(-2, 10 ** 20), json_value),
              "t": json_value}).flatmap(
    lambda base: st.dictionaries(field_names, json_value, max_size=6).map(
        lambda extra: dict(extra, **base)))
row_message = st.builds(
    lambda gpus, procs, host: {"type": "sample", "seq": 1, "t": 1.0, "gpus": gpus,
                               "procs": procs, "host": host},
    st.lists(st.lists(json_leaf, min_size=11, max_size=11), max_size=3),
    st.lists(st.lists(json_leaf, min_size=6, max_size=6), max_size=3),
    st.dictionaries(st.sampled_from(["cpu", "load", "disks", "mem_used", "cores"]), json_value))


def depth(value):
    if isinstance(value, dict):
        return 1 + max([depth(v) for v in value.values()] or [0])
    if isinstance(value, list):
        return 1 + max([depth(v) for v in value] or [0])
    return 0


def finite_everywhere(value):
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(finite_everywhere(v) for v in value.values())
    if isinstance(value, list):
        return all(finite_everywhere(v) for v in value)
    return True


def check_line(line):
    report = wire.Report()
    try:
        msg = wire.decode_clean(line, report)
    except wire.ProtocolError:
        return None
    assert finite_everywhere(msg)
    assert depth(msg) <= wire.MAX_DEPTH + 1
    if msg["type"] == "sample":  # a sample may come without rows (the readers default them)
        for row in msg.get("gpus", []):
            assert len(row) == len(wire.GPU_FIELDS)
            assert row[0] is None or 0 <= row[0] <= 100
        for row in msg.get("procs", []):
            assert isinstance(row[0], int) and len(row) == len(wire.PROC_FIELDS)
            wire.proc_dict(row)
        wire.idle_inputs(msg)
        for row in msg.get("gpus", []):
            wire.throttle_names(wire.gpu_dict(row)["throttle"])
    return msg


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(message, row_message))
@example({"type": "sample", "t": 0, "seq": 0})  # no rows at all: found by a random run
def test_any_message_decodes_to_a_clean_one_or_is_skipped(msg):
    check_line(json.dumps(msg).encode() + b"\n")  # json.dumps writes NaN/Infinity as the box might


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_are_skipped_or_decoded_never_raised(data):
    check_line(data)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(message.map(lambda m: json.dumps(m).encode() + b"\n"),
                          st.binary(max_size=80).map(lambda b: b.replace(b"\n", b"") + b"\n")),
                max_size=8))
def test_hostile_streams_never_break_the_client(lines):
    async def go():
        pushed = []
        client, reader, writer = await started_client(pushed)
        for line in lines:
            reader.feed_data(line)
        reply = await ping(client, reader, writer)
        assert reply["t"] == 1.0 and not client.closed.is_set()
        for msg in pushed:
            assert finite_everywhere(msg)
        text = client.notice()
        assert text is None or "\n" not in text
        await client.close()
    asyncio.run(go())


# ---------------------------------------------------------------- requests
@pytest.mark.parametrize("msg, problem", [
    ({"type": "checklist", "roots": "/root"}, "checklist.roots: expected a list"),
    ({"type": "sha256", "paths": ["/a", 5]}, "sha256.paths[1]: expected a string"),
    ({"type": "kill", "pid": "1; rm -rf /"}, "kill.pid: expected an integer"),
    ({"type": "tmux_capture", "pane": "%1", "lines": 10 ** 9}, "tmux_capture.lines"),
    ({"type": "autostop_arm", "command": "x", "grace": float("nan")}, "autostop_arm.grace"),
    ({"type": "tmux_new", "name": "job", "env": ["A=1"]}, "tmux_new.env: expected an object"),
])
def test_bad_request_parameters_are_refused_with_a_reason(msg, problem):
    assert problem in wire.check_request(msg)


@pytest.mark.parametrize("msg", [
    {"type": "checklist", "artifact_paths": ["/w"], "roots": ["/w"], "temp_dirs": [], "cache_dirs": []},
    {"type": "tmux_new", "name": "job", "command": "python train.py", "cwd": None, "dlhook": True,
     "env": {"A": "1"}},
    {"type": "autostop_arm", "command": "true", "idle_seconds": 1800, "deadline": None,
     "grace": 120.0, "threshold": 5.0},
    {"type": "ping"}, {"type": "snapshot"}, {"type": "subscribe", "since_seq": 0},
])
def test_the_requests_gputui_sends_pass(msg):
    assert wire.check_request(msg) is None


async def test_the_client_refuses_to_send_a_bad_request():
    client, reader, writer = await started_client([])
    sent = len(writer.lines)
    with pytest.raises(Exception, match="bad kill request"):
        await client.request(wire.KILL, pid="12")
    assert len(writer.lines) == sent
