"""`gputui push LOCAL... HOST:DEST`: files and folders onto the box, resumable and verified
(tui/remote/transfer/push.py does the moving, over SFTP or the probe channel; tui/core/transfer/upload_plan.py
decides what to move and says what it will cost)."""

import os
import sys
import time
from typing import Any, Dict, List, Optional

from tui.cli.shared import open_session
from tui.cli.transfer_args import Progress, add_box_flags, run_transfer, set_target, split_remote
from tui.core.text.boxtext import visible
from tui.core.i18n import _, ngettext
from tui.core.transfer.download import size_text

__all__ = ["add_push_parser", "cmd_push", "split_remote"]
ESTIMATE_AFTER = 3.0  # seconds of sending before the time/cost at the measured rate is said


def add_push_parser(sub: Any) -> None:
    p = sub.add_parser("push", help=_("copy files and folders onto the box: resumable, verified"),
                       description=_("Copy local files and folders onto the box (like rsync -a): "
                                     "what is already there and the same is skipped, a cut transfer "
                                     "continues where it stopped, every file is checked by sha256."))
    p.add_argument("paths", nargs="+", metavar="LOCAL... HOST:DEST",
                   help=_("local files or folders, then the box and the folder to put them in"))
    add_box_flags(p)


def say(lines: Any) -> None:
    for level, text in lines:
        print(_("warning: %s") % text if level == "warn" else text, file=sys.stderr)


class _Estimate:
    """Progress that says, once, how long the rest takes and what it costs at the measured rate."""

    def __init__(self, bar: Progress, plan: Any) -> None:
        self.bar, self.plan, self.said = bar, plan, False

    def add(self, rel: str, n: int) -> None:
        self.bar.add(rel, n)
        if not self.said and time.monotonic() - self.bar.t0 >= ESTIMATE_AFTER and self.bar.done:
            from tui.core.transfer.upload_plan import plan_lines
            self.said = True
            for level, text in plan_lines(self.plan, self.bar.rate()):
                if level == "estimate":
                    self.bar.say("  " + text)


def summary(counts: Dict[str, int]) -> str:
    """'4 sent, 1 up to date, 2 folders, 1 link, 2 not sent (listed above)' from the results'
    statuses (it read '2 dir, 2 not sent (listed above), 4 sent, 2 unusual')."""
    words = {"dir": lambda n: ngettext("%d folder", "%d folders", n) % n,
             "link": lambda n: ngettext("%d link", "%d links", n) % n,
             "unusual": lambda n: _("%d not sent (listed above)") % n}
    order = ("sent", "resumed", "up to date", "failed", "dir", "link", "unusual")
    keys = sorted(counts, key=lambda k: (order.index(k) if k in order else len(order), k))
    return ", ".join(words[k](counts[k]) if k in words else "%d %s" % (counts[k], _(k)) for k in keys)


async def push_run(args: Any, host_cfg: Any, locals_: List[str], dest: str) -> Optional[int]:
    from tui.core.providers import resolve
    from tui.core.transfer.upload_plan import as_file_target, may_name_the_file, plan_for, plan_lines, scan_local
    from tui.remote.transfer import push as pusher
    from tui.remote.transfer.push_probe import box_files
    missing = [p for p in locals_ if not os.path.lexists(p)]
    if missing:  # said before connecting, and not as a cut transfer to run again
        for p in missing:
            print(_("gputui: no such local file or folder: %s") % visible(p), file=sys.stderr)
        return 2
    entries = scan_local(locals_)
    for e in entries:
        if e.kind == "unusual":
            print(_("  not sent: %s (%s)") % (visible(e.rel), e.why), file=sys.stderr)
    session = await open_session(args, files=True)
    try:
        snap = await session.fresh_snapshot()
        preset = resolve(((snap.get("inventory") or {}).get("host") or {}).get("provider") or {}, host_cfg)
        async with session.file_client() as client:
            box = box_files(session, client)
            folder_meant = dest.endswith("/")
            dest = await box.resolve(dest)
            if may_name_the_file(entries, folder_meant):
                entries, dest = as_file_target(entries, dest, await box.kind(dest), folder_meant)
            plan = plan_for(entries, dest, await box.free(dest), preset, host_cfg.rate,
                            getattr(host_cfg, "currency", "CNY") or "CNY")
            print(_("to %s:%s (through %s)") % (args.host, visible(dest), _(box.via)), file=sys.stderr)
            say(plan_lines(plan))
            if not plan.fits:
                return 2
            bar = Progress(plan.total)
            t0 = time.monotonic()
            results = await pusher.push(box, pusher.probe_sha(session), entries, dest,
                                        _Estimate(bar, plan).add)
        secs = time.monotonic() - t0
        sent = sum(r.sent for r in results)
        bar.end()
        counts: Dict[str, int] = {}
        for r in results:
            counts[r.status] = counts.get(r.status, 0) + 1
            if r.status == "failed":
                print(_("  failed: %s: %s") % (visible(r.rel), r.detail), file=sys.stderr)
        lost = [e for e in entries if e.lost]
        print(_("%s sent in %.1f s; %s") % (size_text(sent), secs, summary(counts)))
        return 1 if counts.get("failed") or lost else 0
    finally:
        await session.close()


def cmd_push(args: Any) -> int:
    from tui.cli.contact import config_for
    from tui.core.destination import DestinationError
    from tui.remote.transfer.push import PushRefused
    *locals_, spec = args.paths
    if not locals_:
        print(_("gputui: push LOCAL... HOST:DEST"), file=sys.stderr)
        return 2
    try:
        host, dest = split_remote(spec)
        set_target(args, host)
    except (ValueError, DestinationError) as exc:
        print("gputui: %s" % exc, file=sys.stderr)
        return 2
    _cfg, host_cfg = config_for(args.host)

    async def go() -> int:
        code = await push_run(args, host_cfg, locals_, dest)
        return 2 if code is None else code
    return run_transfer("push", go, refused=(PushRefused,))
