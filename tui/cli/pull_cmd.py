"""`gputui pull HOST:PATH... LOCAL`: files and folders from the box, through the same
download engine the checklist's `g` uses (tui.core.transfer.download: NAME.gputui-part resumed, the
box's sha256 computed while bytes flow and checked before anything is replaced, a newer
local copy never overwritten, remote names never trusted as local paths), many files at once
(tui/remote/transfer/pull.py)."""

import collections
import posixpath
import sys
import time
from typing import Any, List, Tuple

from tui.cli.shared import open_session
from tui.cli.transfer_args import Progress, add_box_flags, run_transfer, set_target, split_remote
from tui.core.text.boxtext import visible
from tui.core.i18n import _


FAILED = ("failed", "corrupt", "refused", "no space")  # the download statuses that fail the pull


def add_pull_parser(sub: Any) -> None:
    p = sub.add_parser("pull", help=_("copy files and folders from the box: resumable, verified"),
                       description=_("Copy files and folders from the box into a local folder: a cut "
                                     "transfer continues where it stopped, every file is checked by "
                                     "sha256, a newer local copy is never overwritten."))
    p.add_argument("paths", nargs="+", metavar="HOST:PATH... LOCAL",
                   help=_("the box and the paths on it, then the local folder"))
    add_box_flags(p)


async def _walk_probe(session: Any, top: str) -> Tuple[str, List[Tuple[str, int, float]], List[Tuple[str, str]],
                                                      List[Tuple[str, str]]]:
    """(top as the box's absolute path, files, skipped with why, links with their targets)
    through the probe's file_list (no SFTP)."""
    from remote_probe import wire
    from tui.remote.transfer.pull import CANNOT_LIST, NOT_REGULAR
    reply = await session.request(wire.FILE_LIST, timeout=600, root=top)
    files = [(r, s, m) for r, s, m in (reply.get("files") or [])
             if isinstance(r, str) and isinstance(s, int) and isinstance(m, (int, float))]
    skipped = [(r, NOT_REGULAR) for r in reply.get("skipped") or [] if isinstance(r, str)]
    skipped += [(r, CANNOT_LIST % why) for r, why in _pairs(reply.get("unlisted"))]
    return str(reply.get("root") or top), files, skipped, _pairs(reply.get("links"))


def _pairs(value: Any) -> List[Tuple[str, str]]:
    """[[str, str], ...] from the box, anything else dropped."""
    return [(a, b) for a, b in (p for p in (value or []) if isinstance(p, list) and len(p) == 2)
            if isinstance(a, str) and isinstance(b, str)]


async def pull_run(args: Any, specs: List[str], local: str) -> int:
    import asyncssh

    from tui.remote.probe.client import ProbeError
    from tui.remote.transfer.pull import NOT_REGULAR, SYMLINK, place_links, pull_files, pull_links, walk_sftp
    from tui.core.transfer.download import size_text
    session = await open_session(args, files=True)
    counts: "collections.Counter[str]" = collections.Counter()
    received = [0]
    t0 = time.monotonic()
    try:
        async with session.file_client() as sftp:
            is_sftp = hasattr(sftp, "chdir")
            home = await sftp.realpath(".") if is_sftp else "~"
            for spec in specs:
                top = spec if spec.startswith("/") else posixpath.join(home, spec.lstrip("~/"))
                box_links: List[Tuple[str, str]] = []  # the probe channel says the targets
                try:
                    if is_sftp:
                        files, skipped = await walk_sftp(sftp, top)
                    else:  # the probe channel reads absolute paths: the files' names come relative
                        top, files, skipped, box_links = await _walk_probe(session, top)
                        sftp.base = posixpath.dirname(top.rstrip("/")) or "/"
                except (asyncssh.SFTPNoSuchFile, asyncssh.SFTPPermissionDenied, ProbeError) as exc:
                    # said as what it is, not as a cut transfer to run again
                    print(_("gputui: cannot pull %s: %s") % (visible(top), visible(str(getattr(exc, "reason", None)
                                                                                    or exc))), file=sys.stderr)
                    counts["failed"] += 1
                    continue
                links = [rel for rel, why in skipped if why == SYMLINK]  # SFTP's walk: made below
                for rel, why in skipped:
                    if why == SYMLINK:
                        continue
                    print(_("  not pulled: %s (%s)") % (visible(rel), _(why) if why == NOT_REGULAR else visible(why)),
                          file=sys.stderr)
                    if why != NOT_REGULAR:  # a folder whose files did not come
                        counts["not pulled"] += 1
                parent = posixpath.dirname(top.rstrip("/")) or "/"
                if is_sftp:  # names below are relative: they land under LOCAL as they are
                    await sftp.chdir(parent.encode("utf-8", "surrogateescape"))  # a name that is not UTF-8
                bar = Progress(sum(s for _r, s, _m in files))

                def said(r: Any) -> None:  # failures, and a kept earlier copy, as they happen
                    counts[r.status] += 1
                    received[0] += r.bytes
                    if r.status in FAILED:
                        bar.say(_("  %s: %s %s") % (visible(r.remote), _(r.status), visible(r.detail)))
                    elif r.detail:
                        bar.say(_("  %s: %s; %s") % (visible(r.remote), _(r.status), visible(r.detail)))
                await pull_files(sftp, session, files, parent, local, bar.add, said)
                bar.end()
                made = await pull_links(sftp, parent, links, local) if is_sftp else place_links(local, box_links)
                for rel, status, detail in made:
                    counts[status] += 1
                    if detail:
                        print(_("  %s: %s %s") % (visible(rel), _(status), visible(detail)), file=sys.stderr)
        failed = sum(n for k, n in counts.items() if k in FAILED + ("not pulled",))
        print(_("%s received in %.1f s; %s") % (size_text(received[0]), time.monotonic() - t0, ", ".join(
            "%d %s" % (n, _(k)) for k, n in sorted(counts.items())) or _("nothing to pull")))
        return 1 if failed else 0
    finally:
        await session.close()


def cmd_pull(args: Any) -> int:
    from tui.cli.contact import config_for
    from tui.core.destination import DestinationError
    *specs, local = args.paths
    if not specs:
        print(_("gputui: pull HOST:PATH... LOCAL"), file=sys.stderr)
        return 2
    try:
        split = [split_remote(s) for s in specs]
        hosts = {h for h, _p in split}
        if len(hosts) != 1:
            raise ValueError(_("pull takes paths from one box at a time"))
        set_target(args, hosts.pop())
    except (ValueError, DestinationError) as exc:
        print("gputui: %s" % exc, file=sys.stderr)
        return 2
    config_for(args.host)
    return run_transfer("pull", lambda: pull_run(args, [p for _h, p in split], local))
