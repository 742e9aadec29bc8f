"""`gputui exporter` on a shared network (issue 20): a non-loopback --listen is warned about,
and scrapes can be made to authenticate the way Prometheus does (`authorization:` bearer
token from a file, or `basic_auth:`), checked with real HTTP GETs."""

import base64
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from tui.remote.exporter import Auth, authorized, is_loopback, listen_warning, load_auth

B64 = base64.b64encode


@pytest.mark.parametrize("header,auth,ok", [
    (None, Auth(), True),
    (None, Auth(token="s3cret"), False),
    ("Bearer s3cret", Auth(token="s3cret"), True),
    ("bearer s3cret", Auth(token="s3cret"), True),
    ("Bearer s3cret ", Auth(token="s3cret"), True),
    ("Bearer s3cre", Auth(token="s3cret"), False),
    ("Bearer", Auth(token="s3cret"), False),
    ("Basic " + B64(b"u:s3cret").decode(), Auth(token="s3cret"), False),
    ("Basic " + B64(b"prom:pw").decode(), Auth(basic="prom:pw"), True),
    ("Basic " + B64(b"prom:px").decode(), Auth(basic="prom:pw"), False),
    ("Basic !!!notbase64", Auth(basic="prom:pw"), False),
    ("Bearer prom:pw", Auth(basic="prom:pw"), False),
])
def test_authorized(header, auth, ok):
    assert authorized(header, auth) is ok


@pytest.mark.parametrize("addr,loop", [("127.0.0.1", True), ("::1", True), ("127.8.0.1", True),
                                       ("localhost", True), ("0.0.0.0", False), ("::", False),
                                       ("192.168.1.5", False), ("box.example", False)])
def test_loopback_or_not(addr, loop):
    assert is_loopback(addr) is loop
    warning = listen_warning(addr, Auth())
    assert (warning is None) is loop
    if not loop:
        assert "without authentication" in warning and addr in warning
        assert "without authentication" not in listen_warning(addr, Auth(token="t"))


def test_auth_sources_and_their_order(tmp_path):
    tok = tmp_path / "token"
    tok.write_text("from-file\n")
    basic = tmp_path / "basic"
    basic.write_text("prom:pw\n")
    assert load_auth({}, {}, token_file=str(tok)).token == "from-file"
    assert load_auth({}, {}, basic_auth_file=str(basic)).basic == "prom:pw"
    assert load_auth({"bearer_token": "cfg"}, {"GPUTUI_EXPORTER_TOKEN": "env"}).token == "env"
    assert load_auth({"bearer_token": "cfg"}, {}).token == "cfg"
    assert load_auth({"bearer_token_file": str(tok)}, {}).token == "from-file"
    assert not load_auth({}, {})
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(ValueError, match="is empty"):
        load_auth({}, {}, token_file=str(tmp_path / "empty"))
    with pytest.raises(ValueError, match="user:password"):
        load_auth({}, {}, basic_auth_file=str(tok))


def get(port, header=None):
    req = urllib.request.Request("http://127.0.0.1:%d/metrics" % port)
    if header:
        req.add_header("Authorization", header)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode(), dict(r.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), dict(exc.headers)


def start_exporter(*args):
    proc = subprocess.Popen([sys.executable, "-m", "tui", "exporter", "--listen", "0.0.0.0:0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, GPUTUI_EXPORTER_TOKEN=""))
    said = []
    deadline = time.time() + 60
    while time.time() < deadline:
        line = proc.stderr.readline()
        said.append(line)
        m = re.search(r"serving http://0\.0\.0\.0:(\d+)/metrics", line)
        if m:
            return proc, int(m.group(1)), "".join(said)
    proc.kill()
    raise AssertionError("no serving line: %r" % said)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["bearer", "basic"])
def test_a_scrape_without_the_credentials_gets_401(isolated_dirs, tmp_path, kind):
    secret = tmp_path / "secret"
    secret.write_text("tok-%s\n" % os.urandom(8).hex() if kind == "bearer" else "prometheus:pw-1\n")
    flag = "--bearer-token-file" if kind == "bearer" else "--basic-auth-file"
    proc, port, said = start_exporter(flag, str(secret))
    try:
        assert "reachable from other machines" in said  # 0.0.0.0 is warned about
        good = ("Bearer " + secret.read_text().strip() if kind == "bearer"
                else "Basic " + B64(secret.read_text().strip().encode()).decode())
        status, body, headers = get(port)
        assert status == 401 and "gputui_" not in body
        assert headers["WWW-Authenticate"].startswith("Bearer" if kind == "bearer" else "Basic")
        wrong = ("Bearer " + secret.read_text().strip()[:-1] if kind == "bearer"
                 else "Basic " + B64(b"prometheus:pw-2").decode())
        assert get(port, wrong)[0] == 401
        status, body, _ = get(port, good)
        assert status == 200 and "# HELP" in body
    finally:
        proc.terminate()
        proc.wait(20)


@pytest.mark.timeout(120)
def test_no_auth_on_all_interfaces_is_warned_loudly(isolated_dirs):
    proc, port, said = start_exporter()
    try:
        assert "to anyone who can reach this laptop, without authentication" in said
        assert get(port)[0] == 200  # still served: the user chose it, and was told
    finally:
        proc.terminate()
        proc.wait(20)
