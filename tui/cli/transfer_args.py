"""What `gputui push` and `gputui pull` share: HOST:PATH parsing, their common flags, the
progress line, and one way to run a transfer that turns Ctrl-C and a dropped link into one
line saying how to continue."""

import asyncio
import sys
import time
from typing import Any, Callable, Coroutine, Optional, Tuple

from tui.core.text.boxtext import visible
from tui.core.i18n import _
from tui.core.transfer.download import size_text


def split_remote(spec: str) -> Tuple[str, str]:
    """'mybox:/data' -> ('mybox', '/data'); 'root@h:38211:~/x' -> ('root@h:38211', '~/x').
    The destination starts at the first ':' followed by '/' or '~' (else the first ':')."""
    for i, ch in enumerate(spec):
        if ch == ":" and spec[i + 1:i + 2] in ("/", "~"):
            return spec[:i], spec[i + 1:]
    host, sep, dest = spec.partition(":")
    if not sep or not host:
        raise ValueError(_("the last argument must be HOST:DEST (e.g. mybox:/root/autodl-tmp/data)"))
    return host, dest or "."


def add_box_flags(p: Any) -> None:
    """The flags every transfer command takes to reach the box."""
    for flag, meta, text in (("--ssh-config", "FILE", _("read this ssh config instead of ~/.ssh/config")),
                             ("--remote-dir", "DIR", _("where the probe lives on the box (default ~/.cache/gputui)")),
                             ("--remote-python", "PATH", _("the python to run the probe with on the box"))):
        p.add_argument(flag, metavar=meta, help=text)
    p.add_argument("--simulate", metavar="SCENARIO", help=_("use the probe's GPU simulator (see `gputui scenarios`)"))


def set_target(args: Any, host: str) -> None:
    """args.target and args.host for `host`; ValueError/DestinationError when it is not one."""
    from tui.remote import ssh
    args.target = ssh.Target.parse(host, ssh_config=args.ssh_config)
    args.host = args.target.key


_LINE_OPEN = [False]  # a progress line is on the terminal without its newline


def _break_line(out: Any = sys.stderr) -> None:
    """End an open progress line, so what is printed next starts on its own line."""
    if _LINE_OPEN[0]:
        out.write("\n")
        out.flush()
        _LINE_OPEN[0] = False


class Progress:
    """One line, rewritten at most once a second: done/total, rate, ETA. The clock starts with
    the first byte (connecting and listing are not the transfer's rate), bytes a resumed file
    already had count as done but not as speed, and neither rate nor ETA is shown before a
    second of transfer (first guesses read 73 GiB/s and an ETA of 86077:57). Not drawn when
    stderr is not a terminal (a log would fill with carriage returns)."""

    def __init__(self, total: int, out: Any = sys.stderr, draw: Optional[bool] = None) -> None:
        self.total, self.done, self.out = total, 0, out
        self.t0 = time.monotonic()
        self.started = None  # type: Any
        self.kept = 0  # bytes resumed files already had
        self.shown = 0.0
        isatty = getattr(out, "isatty", None)
        self.draw = bool(isatty and isatty()) if draw is None else draw

    def rate(self) -> float:
        if self.started is None:
            return 0.0
        return (self.done - self.kept) / max(time.monotonic() - self.started, 1e-6)

    def add(self, rel: str, n: int, moved: bool = True) -> None:
        if not moved:
            self.kept += n
        elif n and self.started is None:
            self.started = time.monotonic()
        self.done += n
        now = time.monotonic()
        if not self.draw or (now - self.shown < 1.0 and self.done < self.total):
            return
        self.shown = now
        rate = self.rate()
        known = self.started is not None and now - self.started >= 1.0 and rate > 0
        eta = max(self.total - self.done, 0) / rate if known else None  # a file may grow while sent
        if self.done >= self.total:
            eta = 0
        self.out.write("\r  %s / %s  %s  ETA %s  %s" % (
            size_text(self.done), size_text(self.total), "%s/s" % size_text(int(rate)) if known else "--/s",
            "%d:%02d" % (eta // 60, eta % 60) if eta is not None else "--:--",
            visible(rel, limit=40)) + " " * 4)
        self.out.flush()
        _LINE_OPEN[0] = True

    def say(self, text: str) -> None:
        """A line of its own between progress lines (a failure, a kept copy)."""
        _break_line(self.out)
        print(text, file=self.out)

    def end(self) -> None:
        _break_line(self.out)


# what the user can do after a cut, per command: the parts each direction keeps
INTERRUPTED = {
    "push": lambda: _("gputui: interrupted; partial files are kept on the box as NAME.gputui-part: run "
                      "the same command again to continue"),
    "pull": lambda: _("gputui: interrupted; partial files are kept as NAME.gputui-part: run the same "
                      "command again to continue"),
}
STOPPED = {
    "push": lambda: _("gputui: push stopped: %s; run the same command again to continue"),
    "pull": lambda: _("gputui: pull stopped: %s; run the same command again to continue"),
}


def run_transfer(command: str, make: Callable[[], Coroutine[Any, Any, int]],
                 refused: Tuple[type, ...] = ()) -> int:
    """Run one transfer to its exit code. Ctrl-C: 130 and how to continue; an exception in
    `refused` (a name the box will not write through): 2 and why; anything else (a dropped
    link, an unreachable box): 1, one clear line, the parts kept."""
    try:
        return asyncio.run(make())
    except KeyboardInterrupt:
        _break_line()  # ends the progress line, if one is open
        print(INTERRUPTED[command](), file=sys.stderr)
        return 130
    except refused as exc:
        _break_line()
        print("gputui: %s" % visible(str(exc)), file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - one line, never a traceback; the parts are kept
        from tui.remote.ssh.errors import ConnectError
        _break_line()
        if isinstance(exc, ConnectError):  # not reached, refused, a changed key: nothing moved,
            print("gputui: %s" % visible(str(exc)), file=sys.stderr)  # and again would fail alike
            return 2
        print(STOPPED[command]() % visible(str(exc) or type(exc).__name__), file=sys.stderr)
        return 1
