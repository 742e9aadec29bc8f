"""The socket cache against a messy laptop and a hostile box's hello."""

import os

from tui.core.session import probe_sockets as ps

SECRET = "ab" * 32  # the daemon key a command-path hello gave (wire/challenge.py)

KEY = ps.cache_key("SHA256:abc", "root", None)


def _write(text):
    os.makedirs(os.path.dirname(ps.cache_path()), exist_ok=True)
    with open(ps.cache_path(), "w") as f:
        f.write(text)


def test_a_deeply_nested_cache_file_is_an_empty_cache_not_a_crash():
    _write("[" * 200_000)  # json raises RecursionError, not ValueError
    assert ps.recall(KEY) is None
    ps.remember(KEY, "/s.sock", "/d", secret=SECRET)
    assert ps.recall(KEY)["socket"] == "/s.sock"


def test_a_huge_cache_file_is_not_read():
    _write('{"pad": "%s"}' % ("x" * (ps.MAX_FILE_BYTES + 1)))
    assert ps.recall(KEY) is None
    ps.remember(KEY, "/s.sock", "/d", secret=SECRET)  # and is replaced by a small one
    assert os.path.getsize(ps.cache_path()) < 4096
    assert ps.recall(KEY)["socket"] == "/s.sock"


def test_a_cache_path_that_is_a_directory_leaves_no_temp_files_behind():
    os.makedirs(ps.cache_path())
    for _ in range(3):
        ps.remember(KEY, "/s.sock", "/d", secret=SECRET)  # no exception
    assert ps.recall(KEY) is None
    left = [n for n in os.listdir(os.path.dirname(ps.cache_path())) if n.startswith(".probe-sockets-")]
    assert left == []


def test_a_symlinked_cache_file_is_replaced_not_followed(tmp_path):
    target = tmp_path / "elsewhere.json"
    target.write_text("{}")
    os.makedirs(os.path.dirname(ps.cache_path()), exist_ok=True)
    os.symlink(str(target), ps.cache_path())
    ps.remember(KEY, "/s.sock", "/d", secret=SECRET)
    assert target.read_text() == "{}"  # the file the link pointed at is untouched
    assert ps.recall(KEY)["socket"] == "/s.sock"


def test_a_weird_socket_from_the_box_is_not_remembered():
    for weird in ("relative/probe.sock", "", "/" + "a" * 5000, "/tmp/a\nb.sock", "/tmp/\x1b[31m.sock",
                  "/tmp/a\0b", 42, ["/s.sock"], {"p": "/s.sock"}, None):
        ps.remember(KEY, weird, "/d", secret=SECRET)
        assert ps.recall(KEY) is None, weird
        assert KEY not in (ps._load())
    # markup and spaces are plain path characters: kept, used as data
    ps.remember(KEY, "/tmp/[b]x[/b] dir/probe.sock", "/d", secret=SECRET)
    assert ps.recall(KEY)["socket"] == "/tmp/[b]x[/b] dir/probe.sock"


def test_usable_socket_decides_by_shape():
    assert ps.usable_socket("/root/.cache/gputui/run/probe.sock")
    assert not ps.usable_socket("probe.sock")
    assert not ps.usable_socket("/a\tb")
    assert ps.usable_socket("/" + "a" * (ps.MAX_SOCKET_BYTES - 1))
    assert not ps.usable_socket("/" + "a" * ps.MAX_SOCKET_BYTES)
    assert not ps.usable_socket("/" + "\u00e9" * 60)  # 121 bytes in UTF-8
    assert ps.usable_socket("/tmp/gputui-0-0123456789abcdef/probe.sock")
    assert not ps.usable_socket(b"/s.sock")


def test_two_gputui_processes_writing_at_once_never_corrupt_the_file():
    import subprocess
    import sys
    code = ("import sys\nfrom tui.core.session import probe_sockets as ps\n"
            "for i in range(150):\n"
            "    k = ps.cache_key('SHA256:' + sys.argv[1], 'root', None)\n"
            "    ps.remember(k, '/s%d.sock' % i, '/d', secret='ab' * 32)\n"
            "    r = ps.recall(k)\n"
            "    assert r is None or r['socket'].startswith('/s'), r\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(n)], stderr=subprocess.PIPE)
             for n in range(3)]
    for p in procs:
        assert p.wait(timeout=120) == 0, p.stderr.read()
    data = ps._load()  # valid JSON: each write replaces the file whole
    assert data and all(v["socket"].startswith("/s") for v in data.values())
    left = [n for n in os.listdir(os.path.dirname(ps.cache_path())) if n.startswith(".probe-sockets-")]
    assert left == []
