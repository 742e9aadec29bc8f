"""A hostile box: the names another tenant, a compromised image or an odd training
command can put where gputui reads them (process argv, tmux names, file names).

`NAMES` are the strings; `make_artifacts(root)` builds a folder of files named with them
(plus invalid UTF-8, 255-byte names, a FIFO and a symlink loop); `assert_inert(text)`
is the check every test applies to what reached the user.
"""

import os

OSC52 = "\x1b]52;c;aGk=\x07"  # writes "hi" to the terminal's clipboard
CLEAR = "\x1b[2J"  # clears the screen
BIDI = "\u202e"  # right-to-left override: 'gpj.exe' reads as 'exe.jpg'

NAMES = [
    "[/]",
    "[bold]loud",
    "[@click=app.quit]CLICKME[/]",
    "x[/bold]y",
    "data.paths=[/data/a,/data/b]",
    "clip" + OSC52 + "end",
    "cls" + CLEAR + "end",
    "evil" + BIDI + "gpj.exe",
    "tab\there",
    "c1\x9bcsi",
    "del\x7fdel",
]
# Names that tmux accepts as session/window names (no ':' or '.' in sessions; tmux
# itself rewrites some control characters, which is fine: the rest must stay inert).
TMUX_NAMES = ["[/]", "[@click=app.quit]CLICKME[/]", "w" + CLEAR + "x", "r" + BIDI + "l", "[bold]b"]

# Bytes that are not UTF-8: Python carries them as surrogates (surrogateescape).
BAD_UTF8 = b"bad\xff\xfename"
LONG = "L" * 251 + ".pt"  # 254 bytes: a '.part' suffix would pass NAME_MAX (255)
LONG_UTF8 = "é" * 124 + ".pt"  # 251 bytes in UTF-8


def argv_words():
    """A hostile argv: argv[0] and the first arguments carry markup, escapes and bidi."""
    return [ARGV0, CLEAR, "data.paths=[/data/a,/data/b]", BIDI + "txt.exe", "[bold]"]


# argv[0]: what the dashboard, the notice and `status` show first (before any cut)
ARGV0 = OSC52 + "[@click=app.quit]X[/][/data/a]"
ARGV0_SHOWN = "\\x1b]52;c;aGk=\\x07[@click=app.quit]X[/][/data/a]"


def hostile_job_command(marker="hostile"):
    """A shell command (for a box) that runs a sleeping python whose argv is argv_words(),
    tagged for the simulator's 'adopt' scenario as a GPU job."""
    import shlex
    words = argv_words()
    argv = [words[0], "-c", "import time; time.sleep(300)"] + words[1:] + ["GPUTUI_SIM_GPU_JOB", marker]
    return "exec python3 -c %s %s" % (
        shlex.quote("import os, sys; os.execv(sys.executable, sys.argv[1:])"),
        " ".join(shlex.quote(w) for w in argv))


def make_artifacts(root, skip=()):
    """A checkpoints folder with hostile file names. Returns {kind: path (bytes)}.
    skip: kinds to leave out (e.g. 'bad_utf8' where the probe cannot carry it yet)."""
    root = os.fsencode(str(root))
    os.makedirs(root, exist_ok=True)
    made = {}

    def put(kind, name, data=b"x" * 1000):
        if kind in skip:
            return
        path = os.path.join(root, name if isinstance(name, bytes) else os.fsencode(name))
        os.makedirs(os.path.dirname(path), exist_ok=True)  # '[/bold]' is a folder and a file
        with open(path, "wb") as f:
            f.write(data + kind.encode())
        made[kind] = path

    put("markup", "ckpt[/bold]y.pt")
    put("click", "[@click=app.quit]CLICKME[/].pt")
    put("osc52", "a" + OSC52 + ".pt")
    put("clear", "b" + CLEAR + ".pt")
    put("bidi", "c" + BIDI + "tp.pt")
    put("bad_utf8", BAD_UTF8 + b".pt")
    put("long", LONG)
    put("long_utf8", LONG_UTF8)
    put("plain", "plain.pt")
    if "fifo" not in skip:
        fifo = os.path.join(root, b"fifo.pt")
        os.mkfifo(fifo)
        made["fifo"] = fifo
    if "loop" not in skip:
        loop = os.path.join(root, b"loop")
        os.symlink(b"loop", loop)
        made["loop"] = loop
    return made


def assert_inert(text):
    """What reached the user holds nothing a terminal acts on: no C0/C1 control but
    newline, no DEL, no bidi control, no byte that is not UTF-8 (a bare 0x9b is a CSI)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "surrogateescape")
    for ch in text:
        code = ord(ch)
        bad = (code < 0x20 and ch != "\n") or 0x7F <= code <= 0x9F or 0xD800 <= code <= 0xDFFF \
            or ch in "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
        assert not bad, "%r reached the user in %r" % (ch, text[:400])
