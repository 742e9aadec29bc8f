"""`gputui push LOCAL... HOST:DEST`: files and folders onto the box, resumable and verified
(tui/remote/push.py does the moving; tui/core/upload_plan.py decides what to move)."""

import asyncio
import sys
import time
from typing import Any, List, Optional, Tuple

from tui.cli.shared import open_session
from tui.core.boxtext import visible
from tui.core.i18n import _
from tui.core.transfer import size_text


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


def add_push_parser(sub: Any) -> None:
    p = sub.add_parser("push", help=_("copy files and folders onto the box: resumable, verified"),
                       description=_("Copy local files and folders onto the box (like rsync -a): "
                                     "what is already there and the same is skipped, a cut transfer "
                                     "continues where it stopped, every file is checked by sha256."))
    p.add_argument("paths", nargs="+", metavar="LOCAL... HOST:DEST",
                   help=_("local files or folders, then the box and the folder to put them in"))
    for flag, meta, text in (("--ssh-config", "FILE", _("read this ssh config instead of ~/.ssh/config")),
                             ("--remote-dir", "DIR", _("where the probe lives on the box (default ~/.cache/gputui)")),
                             ("--remote-python", "PATH", _("the python to run the probe with on the box"))):
        p.add_argument(flag, metavar=meta, help=text)
    p.add_argument("--simulate", metavar="SCENARIO", help=_("use the probe's GPU simulator (see `gputui scenarios`)"))


class Progress:
    """One line, rewritten at most once a second: done/total, rate, ETA."""

    def __init__(self, total: int, out: Any = sys.stderr) -> None:
        self.total, self.done, self.out = total, 0, out
        self.t0 = time.monotonic()
        self.shown = 0.0

    def add(self, rel: str, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if now - self.shown < 1.0 and self.done < self.total:
            return
        self.shown = now
        rate = self.done / max(now - self.t0, 1e-6)
        eta = (self.total - self.done) / rate if rate > 0 else 0
        self.out.write("\r  %s / %s  %s/s  ETA %d:%02d  %s" % (
            size_text(self.done), size_text(self.total), size_text(int(rate)), eta // 60, eta % 60,
            visible(rel, limit=40)) + " " * 4)
        self.out.flush()


async def push_run(args: Any, host_cfg: Any, locals_: List[str], dest: str) -> Optional[int]:
    from tui.core.upload_plan import on_wiped_disk, scan_local
    from tui.core.providers import resolve
    from tui.remote import push as pusher
    entries = scan_local(locals_)
    files = [e for e in entries if e.kind == "file"]
    total = sum(e.size for e in files)
    odd = [e for e in entries if e.kind == "unusual"]
    print(_("%d files, %s, to %s:%s") % (len(files), size_text(total), args.host, dest), file=sys.stderr)
    for e in odd:
        print(_("  not sent: %s (%s)") % (visible(e.rel), e.why), file=sys.stderr)
    session = await open_session(args)
    try:
        snap = await session.fresh_snapshot()
        preset = resolve(((snap.get("inventory") or {}).get("host") or {}).get("provider") or {}, host_cfg)
        async with session.file_client() as sftp:
            if not hasattr(sftp, "makedirs"):
                print(_("gputui: push needs SFTP, and this box offers none (a PTY-only proxy): "
                        "pushing through the probe channel is not built yet"), file=sys.stderr)
                return 2
            if dest.startswith("~"):
                dest = (await sftp.realpath(".")) + dest[1:]
            elif not dest.startswith("/"):
                dest = (await sftp.realpath(".")) + "/" + dest
            wiped = on_wiped_disk(dest, getattr(preset, "ephemeral_paths", ()) or ())
            if wiped:
                print(_("warning: %s is on a disk %s wipes at release (%s)") % (
                    dest, preset.name, wiped), file=sys.stderr)
            free = await pusher.free_on_box(sftp, dest.rsplit("/", 1)[0] or "/")
            if free is not None and free < total:
                print(_("gputui: the box has %s free there, the files need %s: nothing sent") % (
                    size_text(free), size_text(total)), file=sys.stderr)
                return 2
            rate = host_cfg.rate
            if rate:
                print(_("the GPUs bill %s/h while this runs") % rate, file=sys.stderr)
            bar = Progress(total)
            t0 = time.monotonic()
            results = await pusher.push(sftp, pusher.probe_sha(session), entries, dest, bar.add)
        secs = time.monotonic() - t0
        sent = sum(r.sent for r in results)
        print("", file=sys.stderr)
        counts = {}
        for r in results:
            counts[r.status] = counts.get(r.status, 0) + 1
            if r.status == "failed":
                print(_("  failed: %s: %s") % (visible(r.rel), r.detail), file=sys.stderr)
        print(_("%s sent in %.1f s; %s") % (size_text(sent), secs, ", ".join(
            "%d %s" % (n, k) for k, n in sorted(counts.items()))))
        return 1 if counts.get("failed") else 0
    finally:
        await session.close()


def cmd_push(args: Any) -> int:
    from tui.cli.contact import config_for
    from tui.core.destination import DestinationError
    from tui.remote import ssh
    from tui.remote.push import PushRefused
    *locals_, spec = args.paths
    if not locals_:
        print(_("gputui: push LOCAL... HOST:DEST"), file=sys.stderr)
        return 2
    try:
        host, dest = split_remote(spec)
        args.target = ssh.Target.parse(host, ssh_config=args.ssh_config)
    except (ValueError, DestinationError) as exc:
        print("gputui: %s" % exc, file=sys.stderr)
        return 2
    args.host = args.target.key
    _cfg, host_cfg = config_for(args.host)
    try:
        code = asyncio.run(push_run(args, host_cfg, locals_, dest))
    except KeyboardInterrupt:
        print(_("\ngputui: interrupted; partial files are kept on the box as NAME.gputui-part: run "
                "the same command again to continue"), file=sys.stderr)
        return 130
    except PushRefused as exc:
        print("gputui: %s" % exc, file=sys.stderr)
        return 2
    except Exception as exc:  # a dropped link, an unreachable box: one clear line, parts kept
        print(_("gputui: push stopped: %s; run the same command again to continue") % visible(str(exc) or type(exc).__name__),
              file=sys.stderr)
        return 1
    return 2 if code is None else code
