"""The pieces of the transports as plain functions: PTY-refusal detection, markers
through noise, the bootstrap's upload through a real /bin/sh, the probe-channel file
reads and the attach bridge's line-safe interleaving."""

import asyncio
import base64
import hashlib
import io
import os
import subprocess

import pytest

from remote_probe import wire
from remote_probe.files import filexfer
from remote_probe.attach import _Out
from tui.remote import bootstrap, transports
from tui.remote.probe import files as probe_files
from tui.remote.probe.bundle import probe_filename
from tui.remote.probe.client import ProbeClient, ProbeStartError, hello_in_noise


@pytest.mark.parametrize("status,out,err,want", [
    (1, b"Error: Your SSH client doesn't support PTY\r\n", b"", True),  # RunPod, on stdout
    (1, b"", b"Error: Your SSH client doesn't support PTY\n", True),  # or on stderr
    (1, b"This service requires a PTY. Use ssh -t\n", b"", True),
    (1, b"", b"PTY is required for this account\n", True),
    (1, b"interactive shells only\n", b"", True),
    (255, b"", b"Your client does not support a terminal\n", True),
    (0, b"Error: Your SSH client doesn't support PTY", b"", False),  # it ran fine
    (1, b"", b"python3: not found\n", False),
    (127, b"", b"sh: 1: /bin/sh: not found\n", False),
    (None, b"", b"", False),
])
def test_pty_refusal_is_recognised(status, out, err, want):
    assert transports.looks_pty_only(status, out, err) is want


def test_markers_are_found_after_any_noise():
    tag = "a1b2c3"
    noise = b"\x1b]0;title\x07Welcome! no newline -> GTUI:000000:RUN x\n"  # another tag's line
    buf = noise + b"GTUI:a1b2c3:NOTE some dir\r\nmore\nGTUI:a1b2c3:RUN /tmp/x\n"
    word, detail, end = bootstrap.find_marker(buf, tag)
    assert (word, detail) == ("NOTE", "some dir")
    word, detail, _ = bootstrap.find_marker(buf, tag, end)
    assert (word, detail) == ("RUN", "/tmp/x")
    # the echo of the typed stage-0 line does not count as READY
    assert bootstrap.find_marker(transports.stage0(tag).encode() + b"\n", tag) is None
    assert bootstrap.parse_error("98 Python 3.6.9 is too old") == (98, "Python 3.6.9 is too old")


def test_stage0_survives_any_login_shell():
    line = transports.stage0("abcdef")
    # fish reads \\ and \' inside single quotes; csh and tcsh a newline: none of them here
    assert "\\\\" not in line and "\\'" not in line and "\n" not in line and line.endswith("\r")
    assert line.count("'") == 2  # one single-quoted word: bash, zsh, fish, csh all agree
    r = subprocess.run(["/bin/sh", "-c", line.strip().replace("exec ", "", 1)],
                       input=b"13\necho scripted\n", stdout=subprocess.PIPE, timeout=10)
    assert b"GTUI:abcdef:READY" in r.stdout and r.stdout.endswith(b"scripted\n")


def test_box_text_in_messages_is_plain():
    said = b"\x1b]0;evil\x07\x1b[31mred\x1b[0m\r\nline2\x07\x00"
    assert transports.printable(said) == "red line2??"


class FakeRaw:
    def __init__(self, chunks):
        self.chunks = list(chunks)

    async def read(self, n):
        await asyncio.sleep(0)
        return self.chunks.pop(0) if self.chunks else b""


async def test_stream_reader_hands_leftovers_to_the_probe_client():
    hello = wire.encode(wire.hello("probe", "1", []))
    raw = FakeRaw([b"banner GTUI:ab", b"cd12:RUN /d\n", hello[:10], hello[10:] + b'{"type":"ping"'])
    r = transports.StreamReader(raw)
    assert await r.marker("abcd12") == ("RUN", "/d")
    assert b"banner" in bytes(r.noise)
    assert await r.readline() == hello
    assert await r.readline() == b'{"type":"ping"'  # end of stream: what is left
    assert await r.marker("abcd12") is None


async def test_hello_is_found_behind_noise_without_newline():
    hello = wire.encode(wire.hello("probe", "1", []))
    assert hello_in_noise(b"\x1b]0;t\x07Welcome -> " + hello)["type"] == "hello"
    assert hello_in_noise(b"junk only\n") is None

    class W:
        def write(self, data):
            self.data = data

    client = ProbeClient(transports.StreamReader(FakeRaw([b"(base) conda says hi -> " + hello])), W())
    assert (await client.start())["type"] == "hello"


async def test_probe_start_error_line_is_raised_with_its_exit_code():
    line = wire.encode({"type": "error", "id": None, "error": "unknown scenario 'x'", "exit": 64})

    class W:
        def write(self, data):
            pass

    client = ProbeClient(transports.StreamReader(FakeRaw([b"noise\n" + line])), W())
    with pytest.raises(ProbeStartError) as info:
        await client.start()
    assert info.value.exit_code == 64 and "unknown scenario" in str(info.value)


def run_script(tmp_path, stdin, **kw):
    data = kw.pop("data")
    sha = hashlib.sha256(data).hexdigest()
    cmd = bootstrap.probe_command(sha, mode="once", simulate="cpu-only", remote_dir=str(tmp_path / "d"), tag="ab",
                                  upload=True, size=len(data), **kw)
    return sha, subprocess.run(["/bin/sh", "-c", cmd], input=stdin, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=30)


def test_upload_is_length_prefixed_and_checked(tmp_path):
    from tui.remote.probe.bundle import build_probe
    data, _ = build_probe()
    sha, r = run_script(tmp_path, data, data=data)
    assert r.returncode == 0, r.stderr
    assert b"GTUI:ab:NEED raw" in r.stdout and b"GTUI:ab:GOT" in r.stdout
    assert (tmp_path / "d" / probe_filename(sha)).read_bytes() == data
    assert b"no NVIDIA GPU found" in r.stdout  # and the probe ran
    assert not [p for p in os.listdir(tmp_path / "d") if ".tmp-" in p]


def test_mangled_raw_upload_is_retried_as_base64(tmp_path):
    from tui.remote.probe.bundle import build_probe
    data, _ = build_probe()
    bad = data[:100] + b"\r" + data[101:]  # what a terminal's CR/LF translation would do
    sha, r = run_script(tmp_path, bad + base64.b64encode(data), data=data)
    assert r.returncode == 0, r.stderr
    assert b"NEED b64" in r.stdout
    assert (tmp_path / "d" / probe_filename(sha)).read_bytes() == data


def test_upload_corrupted_twice_is_refused_and_leaves_nothing(tmp_path):
    data = b"x" * 1000
    sha, r = run_script(tmp_path, b"y" * 1000 + base64.b64encode(b"y" * 1000), data=data)
    assert r.returncode == bootstrap.EXIT_UPLOAD_FAILED
    assert b"GTUI:ab:ERR 94" in r.stdout
    assert os.listdir(tmp_path / "d") == []


def test_named_python_that_is_missing_is_named(tmp_path):
    sha, r = run_script(tmp_path, b"", data=b"x", explicit_python="/nope/python3")
    assert r.returncode == bootstrap.EXIT_PYTHON_NOT_FOUND
    msg = bootstrap.explain_exit(r.returncode, r.stderr.decode())
    assert "/nope/python3 does not exist on the box" in msg


# -- files through the probe channel -------------------------------------------------
def test_file_requests_are_answered_by_the_bridge(tmp_path):
    path = tmp_path / "f.bin"
    data = os.urandom(filexfer.MAX_CHUNK + 10)
    path.write_bytes(data)
    line = filexfer.encode({"type": filexfer.FILE_READ, "id": 7, "path": str(path),
                            "offset": 5, "size": 10 << 20})
    req = filexfer.parse_request(line)
    reply = filexfer.handle(req)
    assert reply["id"] == 7 and not reply["eof"] and reply["file_size"] == len(data)
    assert base64.b64decode(reply["data"]) == data[5:5 + filexfer.MAX_CHUNK]  # capped
    assert len(filexfer.encode(reply)) < wire.MAX_LINE
    assert filexfer.parse_request(wire.encode({"type": "ping", "id": 1})) is None
    err = filexfer.handle({"type": filexfer.FILE_READ, "id": 8, "path": str(tmp_path / "no")})
    assert err["type"] == "error" and "cannot read" in err["error"]


def test_bridge_never_splits_a_daemon_line_with_its_own_reply():
    out = io.BytesIO()
    o = _Out(out)
    o.daemon(b'{"a":1}\n{"b":')
    o.own(b'{"reply":1}\n')  # held: the daemon's line is unfinished
    o.daemon(b'2}\n')
    o.own(b'{"reply":2}\n')
    assert out.getvalue() == b'{"a":1}\n{"b":2}\n{"reply":1}\n{"reply":2}\n'


async def test_probe_files_reads_in_pipelined_chunks(tmp_path):
    data = os.urandom(3 * probe_files.ProbeFiles.CHUNK + 77)
    (tmp_path / "x").write_bytes(data)
    calls = []

    async def request(kind, timeout=None, **params):
        calls.append(params["offset"])
        reply = filexfer.handle(dict(params, type=kind, id=1))
        return reply

    files = probe_files.ProbeFiles(request)
    async with files.open(str(tmp_path / "x"), "rb", block_size=1, max_requests=1) as f:
        assert await f.read(len(data) + 1000, 0) == data  # short at end of file
        assert await f.read(100, len(data) - 50) == data[-50:]
    assert len(calls) >= 5
