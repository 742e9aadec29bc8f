"""`gputui pull HOST:PATH... LOCAL`: files and folders from the box, through the same
download engine the checklist's `g` uses (tui.core.transfer.download: .part resumed, the
box's sha256 computed while bytes flow and checked before anything is replaced, a newer
local copy never overwritten, remote names never trusted as local paths)."""

import posixpath
import stat
import sys
from typing import Any, List, Tuple

from tui.cli.shared import open_session
from tui.cli.transfer_args import Progress, add_box_flags, run_transfer, set_target, split_remote
from tui.core.boxtext import visible
from tui.core.i18n import _


def add_pull_parser(sub: Any) -> None:
    p = sub.add_parser("pull", help=_("copy files and folders from the box: resumable, verified"),
                       description=_("Copy files and folders from the box into a local folder: a cut "
                                     "transfer continues where it stopped, every file is checked by "
                                     "sha256, a newer local copy is never overwritten."))
    p.add_argument("paths", nargs="+", metavar="HOST:PATH... LOCAL",
                   help=_("the box and the paths on it, then the local folder"))
    add_box_flags(p)


async def _walk(sftp: Any, top: str) -> Tuple[List[Tuple[str, int, float]], List[str]]:
    """(files as (path relative to top's parent, size, mtime), skipped entries) under top."""
    parent = posixpath.dirname(top.rstrip("/")) or "/"
    files, skipped = [], []
    todo = [top.rstrip("/") or "/"]
    while todo:
        path = todo.pop()
        attrs = await sftp.lstat(path)
        mode = attrs.permissions or 0
        rel = posixpath.relpath(path, parent)
        if stat.S_ISDIR(mode):
            for name in sorted(await sftp.listdir(path), reverse=True):
                if name not in (".", ".."):
                    todo.append(posixpath.join(path, name))
        elif stat.S_ISREG(mode):
            files.append((rel, attrs.size or 0, attrs.mtime or 0))
        else:
            skipped.append(rel)
    return files, skipped


async def _walk_probe(session: Any, top: str) -> Tuple[str, List[Tuple[str, int, float]], List[str]]:
    """(top as the box's absolute path, files, skipped) through the probe's file_list (no SFTP)."""
    from remote_probe import wire
    reply = await session.request(wire.FILE_LIST, timeout=600, root=top)
    files = [(r, s, m) for r, s, m in (reply.get("files") or [])
             if isinstance(r, str) and isinstance(s, int) and isinstance(m, (int, float))]
    skipped = [r for r in reply.get("skipped") or [] if isinstance(r, str)]
    return str(reply.get("root") or top), files, skipped


async def pull_run(args: Any, specs: List[str], local: str) -> int:
    from remote_probe import wire
    from tui.core.transfer import download
    session = await open_session(args)
    failed = 0
    try:
        async with session.file_client() as sftp:
            is_sftp = hasattr(sftp, "chdir")
            home = await sftp.realpath(".") if is_sftp else "~"
            for spec in specs:
                top = spec if spec.startswith("/") else posixpath.join(home, spec.lstrip("~/"))
                if is_sftp:
                    files, skipped = await _walk(sftp, top)
                else:  # the probe channel reads absolute paths: the files' names come relative
                    top, files, skipped = await _walk_probe(session, top)
                    sftp.base = posixpath.dirname(top.rstrip("/")) or "/"
                for rel in skipped:
                    print(_("  not pulled: %s (not a regular file or folder)") % visible(rel), file=sys.stderr)
                parent = posixpath.dirname(top.rstrip("/")) or "/"
                if is_sftp:  # names below are relative: they land under LOCAL as they are
                    await sftp.chdir(parent)
                bar = Progress(sum(s for _r, s, _m in files))
                for rel, size, mtime in files:
                    full = posixpath.join(parent, rel)

                    async def box_sha(full: str = full) -> Any:
                        reply = await session.request(wire.SHA256, timeout=600, paths=[full])
                        return (reply.get("sha256") or {}).get(full)
                    seen = [0]

                    def on_progress(done: int, _size: int, rel: str = rel, seen: List[int] = seen) -> None:
                        bar.add(rel, done - seen[0])
                        seen[0] = done
                    r = await download(sftp, rel, local, size, mtime, expected_sha=box_sha,
                                       progress=on_progress)
                    if r.status in ("failed", "corrupt", "refused", "no space"):
                        failed += 1
                        print(_("\n  %s: %s %s") % (visible(rel), _(r.status), visible(r.detail)), file=sys.stderr)
                    else:
                        print(_("\n  %s: %s") % (visible(rel), _(r.status)), file=sys.stderr)
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
