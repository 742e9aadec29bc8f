"""What `gputui push` will do, decided before a byte moves: plain functions, table-tested.

- ``scan_local(paths)``: the local tree as rsync -a sees it (regular files, directories,
  symlinks kept as links), with anything else (FIFOs, devices, sockets) and names a box's
  filesystem refuses listed as ``unusual`` — never silently dropped.
- ``decide(entry, remote, part_size)``: per file, skip (same size and mtime: rsync's quick
  check), resume (a ``.gputui-part`` shorter than the file), or send from zero.
- ``remote_path_for(dest, rel)``: every name lands under DEST; a relative name that could
  climb out of it is refused.
- ``estimate(...)``: how long at the measured rate and what the GPUs bill meanwhile.
"""

import dataclasses
import os
import re
import posixpath
import stat
from typing import Iterable, List, Optional, Tuple

from remote_probe import wire
from tui.core.billing.rates import format_money
from tui.core.text.format import bytes_rate, duration
from tui.core.i18n import _, ngettext
from tui.core.transfer.download import size_text

PART_SUFFIX = wire.PART_SUFFIX  # a partial upload beside its final name, continued on the next push
# ... and a big file's other segments, NAME.gputui-part.1 and on (tui/remote/transfer/push_spread.py):
# a file's own name keeps 2 bytes more to spare (".9" at most)
PART_NAME = re.compile(re.escape(PART_SUFFIX) + r"(\.[0-9]+)?$")
NAME_MAX = 255  # bytes in one name on ext4/xfs/btrfs, the boxes' filesystems


@dataclasses.dataclass(frozen=True)
class LocalEntry:
    rel: str  # path under the pushed root, '/'-separated ('' for a single file pushed)
    path: str  # the local path
    kind: str  # "file" | "dir" | "symlink" | "unusual"
    size: int = 0
    mtime: float = 0.0
    mode: int = 0o644
    link: str = ""  # a symlink's target, as it is (rsync -a keeps links as links)
    why: str = ""  # for "unusual": what it is, shown to the user
    lost: bool = False  # "unusual" and the user's data (unreadable, a name the box refuses): push fails


def _kind_of(st: os.stat_result) -> Tuple[str, str]:
    if stat.S_ISREG(st.st_mode):
        return "file", ""
    if stat.S_ISDIR(st.st_mode):
        return "dir", ""
    if stat.S_ISLNK(st.st_mode):
        return "symlink", ""
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(st.st_mode):
            return "unusual", name
    return "unusual", "not a regular file"


def name_problem(rel: str, is_file: bool = False) -> Optional[str]:
    """Why a box's filesystem would refuse this name, or None. A file is first written as
    NAME.gputui-part, so its own name has PART_SUFFIX fewer bytes to spare."""
    parts = rel.split("/")
    if is_file and PART_NAME.search(parts[-1]):
        # the box side would take it for a partial upload (a big file's segment parts are
        # NAME.gputui-part.1, .2...): sent, it could be overwritten or joined into another file
        return "a name gputui uses for its partial uploads"
    for i, part in enumerate(parts):
        raw = part.encode("utf-8", "surrogateescape")
        limit = NAME_MAX - len(PART_SUFFIX) - 2 if is_file and i == len(parts) - 1 else NAME_MAX
        if len(raw) > limit:
            return "a name longer than %d bytes" % limit
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            return "a name that is not UTF-8"
    return None


def unreadable(path: str) -> Optional[str]:
    """Why this local file cannot be read, or None: found before anything is sent (one such
    file stopped every push of its tree, each leaving empty parts on the box)."""
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)))
    except OSError as exc:
        return "a file that cannot be read here: %s" % (exc.strerror or exc)
    return None


def _entry(path: str, rel: str) -> LocalEntry:
    st = os.lstat(path)
    kind, why = _kind_of(st)
    problem = name_problem(rel, kind == "file") if rel else None
    if problem is None and kind == "file":
        problem = unreadable(path)
    if problem:
        kind, why = "unusual", problem
    link = os.readlink(path) if kind == "symlink" else ""
    return LocalEntry(rel, path, kind, st.st_size if kind == "file" else 0, st.st_mtime,
                      stat.S_IMODE(st.st_mode), link, why, lost=problem is not None)


def scan_local(paths: Iterable[str]) -> List[LocalEntry]:
    """Every entry under each path (a directory's own name is kept, as `rsync -a dir dest`
    without a trailing slash does; `.` and `..` give their contents, as rsync and scp copy
    them: `push . box:/x` fills /x). Symlinks are not followed."""
    out: List[LocalEntry] = []
    for top in paths:
        norm = os.path.normpath(top)
        if norm in (".", "..") or norm.endswith(os.sep + ".."):
            out.extend(_walk(norm, ""))  # was refused: "refusing name '.'"
            continue
        top = top.rstrip("/") or "/"
        base = os.path.basename(top)
        first = _entry(top, base)
        out.append(first)
        if first.kind == "dir":
            out.extend(_walk(top, base))
    return _one_per_name(out)


def _walk(top: str, base: str) -> List[LocalEntry]:
    """The entries below folder `top`, named under `base` ('' for the folder's contents)."""
    out: List[LocalEntry] = []
    unlisted: "dict[str, str]" = {}  # folders os.walk could not read: path -> why

    def cannot_list(exc: OSError) -> None:
        unlisted[exc.filename] = exc.strerror or str(exc)
    for root, dirs, files in os.walk(top, onerror=cannot_list):
        dirs.sort()
        rel_root = posixpath.normpath(posixpath.join(base, os.path.relpath(root, top).replace(os.sep, "/")))
        rel_root = "" if rel_root == "." else rel_root
        for name in sorted(dirs) + sorted(files):
            out.append(_entry(os.path.join(root, name), posixpath.join(rel_root, name)))
        # a symlinked directory is an entry, never walked into
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
    if unlisted:  # made empty on the box, its files would be missing without a word
        out = [dataclasses.replace(e, kind="unusual", lost=True,
                                   why="a folder that cannot be read here: %s" % unlisted[e.path])
               if e.kind == "dir" and e.path in unlisted else e for e in out]
    if top in unlisted and not base:  # the contents of a folder that cannot be read
        out.append(LocalEntry(".", top, "unusual", why="a folder that cannot be read here: %s"
                              % unlisted[top], lost=True))
    return out


def _one_per_name(entries: List[LocalEntry]) -> List[LocalEntry]:
    """Two sources with the same name under DEST (`push a/f.txt b/f.txt box:/x`) would race
    for one part on the box: the first is kept, a later one is listed, not sent. Folders of
    the same name merge (their folder is made once)."""
    seen: "dict[str, str]" = {}
    out: List[LocalEntry] = []
    for e in entries:
        first = seen.get(e.rel)
        if first is None:
            seen[e.rel] = e.kind
            out.append(e)
        elif not (e.kind == first == "dir"):
            out.append(dataclasses.replace(e, kind="unusual", size=0, lost=True,
                                           why="the same name as another source"))
    return out


def may_name_the_file(entries: List[LocalEntry], folder_meant: bool) -> bool:
    """Could DEST be the file's own name (one file pushed, DEST not written with a trailing
    '/')? Only then does push ask the box what DEST is (as_file_target)."""
    return not folder_meant and len(entries) == 1 and entries[0].kind == "file"


def as_file_target(entries: List[LocalEntry], dest: str, dest_kind: Optional[str],
                   folder_meant: bool) -> Tuple[List[LocalEntry], str]:
    """(entries, DEST folder) with `push model.pt box:/x/best.pt` read as scp and rsync read it:
    one file pushed to a DEST that is not a folder (absent, or a file) lands as DEST, not
    inside a new folder named best.pt. A DEST written with a trailing '/', one that is a folder
    (or a link to one), or more than one source: the folder to put them in."""
    if not may_name_the_file(entries, folder_meant) or dest_kind not in ("none", "file"):
        return entries, dest
    parent, name = posixpath.split(dest.rstrip("/"))
    if not name or name in (".", "..") or name_problem(name, True):
        return entries, dest
    return [dataclasses.replace(entries[0], rel=name)], parent or "/"


def remote_path_for(dest: str, rel: str) -> str:
    """DEST/rel, refusing anything that would land outside DEST."""
    if not rel or rel.startswith("/") or "\x00" in rel:
        raise ValueError("refusing name %r" % (rel,))
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise ValueError("refusing name %r: it would leave the destination" % (rel,))
    return posixpath.join(dest, rel)


@dataclasses.dataclass(frozen=True)
class RemoteStat:
    size: int
    mtime: float
    is_file: bool = True
    mode: Optional[int] = None  # permission bits, where the box says (SFTP)


def decide(entry: LocalEntry, remote: Optional[RemoteStat], part_size: Optional[int]) -> Tuple[str, int]:
    """(action, offset) for one file: ("skip", 0) when the box has it (same size, same mtime
    to the second), ("resume", n) when a partial upload of n bytes is there, else
    ("send", 0)."""
    if remote is not None and remote.is_file and remote.size == entry.size \
            and abs(remote.mtime - entry.mtime) < 1.0:
        return "skip", 0
    if part_size is not None and 0 < part_size <= entry.size:
        return "resume", part_size
    return "send", 0


def estimate(total_bytes: int, bytes_per_second: Optional[float],
             rate_per_hour: Optional[float]) -> Tuple[Optional[float], Optional[float]]:
    """(seconds, money the box bills meanwhile) at the measured rate; None when unknown."""
    if not bytes_per_second or bytes_per_second <= 0:
        return None, None
    seconds = total_bytes / bytes_per_second
    cost = None if rate_per_hour is None else rate_per_hour * seconds / 3600.0
    return seconds, cost


def on_wiped_disk(dest: str, wiped_paths: Iterable[str]) -> Optional[str]:
    """The provider path DEST lies under that the chosen release action wipes, or None."""
    d = posixpath.normpath(dest)
    for p in wiped_paths:
        p = posixpath.normpath(p)
        if p == "/" or d == p or d.startswith(p.rstrip("/") + "/"):
            return p
    return None


NO_GPU_MODE_PROVIDERS = ("autodl", "gpuhub")  # instances that restart without the GPU (无卡模式)


@dataclasses.dataclass(frozen=True)
class Plan:
    """What a push will do, said before it starts (the CLI's lines, the app's push screen)."""
    files: int
    total: int  # bytes of the files
    unusual: Tuple[Tuple[str, str], ...] = ()  # (name, why) not sent
    free: Optional[int] = None  # bytes free on the box's disk at DEST
    wiped: Optional[str] = None  # the provider path DEST lies under that release wipes
    wiper: str = ""  # who wipes it ('AutoDL')
    provider: str = ""  # the provider's key ('autodl')
    rate_per_hour: Optional[float] = None
    currency: str = "CNY"

    @property
    def fits(self) -> bool:
        return self.free is None or self.free >= self.total


def plan_for(entries: Iterable[LocalEntry], dest: str, free: Optional[int], preset: object,
             rate_per_hour: Optional[float], currency: str = "CNY") -> Plan:
    """The plan of pushing `entries` to DEST, given the box's free space and its provider
    preset (tui.core.providers.Preset: its key, name and the paths its release wipes)."""
    items = list(entries)
    files = [e for e in items if e.kind == "file"]
    odd = tuple((e.rel, e.why) for e in items if e.kind == "unusual")
    wiped = on_wiped_disk(dest, getattr(preset, "ephemeral_paths", ()) or ())
    return Plan(len(files), sum(e.size for e in files), odd, free, wiped,
                str(getattr(preset, "name", "") or ""), str(getattr(preset, "key", "") or ""),
                rate_per_hour, currency)


def plan_lines(plan: Plan, bytes_per_second: Optional[float] = None) -> List[Tuple[str, str]]:
    """(level, text) lines about a plan: level "info", "warn", "stop" (nothing is sent) or
    "estimate" (the time and cost at the measured rate, once there is one)."""
    out: List[Tuple[str, str]] = [("info", ngettext("%d file, %s", "%d files, %s", plan.files) % (plan.files, size_text(plan.total)))]
    if not plan.fits:
        out.append(("stop", _("the box has %s free there, the files need %s: nothing sent") % (
            size_text(plan.free or 0), size_text(plan.total))))
    if plan.wiped:
        if plan.provider in ("", "unknown"):  # a guess: say it is one, and how to know
            out.append(("warn", _("the provider is not known: this destination may be on a disk "
                                  "that is wiped at release (%s); set provider in the config to "
                                  "know") % plan.wiped))
        else:
            out.append(("warn", _("this destination is on a disk %s wipes at release (%s)") % (
                plan.wiper or _("the provider"), plan.wiped)))
    seconds, cost = estimate(plan.total, bytes_per_second, plan.rate_per_hour)
    if seconds is not None:
        line = _("about %(time)s at the measured %(rate)s") % {
            "time": duration(seconds), "rate": bytes_rate(bytes_per_second)}
        if cost is not None:
            line += _("; the GPUs bill %s meanwhile (%s/h)") % (
                format_money(cost, plan.currency), format_money(plan.rate_per_hour, plan.currency))
        out.append(("estimate", line))
    elif plan.rate_per_hour:
        out.append(("info", _("the GPUs bill %s/h while this runs") % format_money(
            plan.rate_per_hour, plan.currency)))
    if plan.provider in NO_GPU_MODE_PROVIDERS and plan.total:
        out.append(("info", _("tip: an instance started in 无卡模式 (no-GPU mode) bills a fraction "
                              "of the GPU rate while data moves; restart it with the GPU once the data is there")))
    return out


def progress_text(done: int, total: int, seconds: float) -> str:
    """'12.0 MiB / 64.0 MiB  19%  4.2 MB/s  ETA 0:12' for a progress line (a file or all)."""
    rate = done / seconds if seconds > 0 else 0.0
    eta = duration((total - done) / rate) if rate > 0 else "n/a"
    pct = 100.0 * done / total if total else 100.0
    return "%s / %s  %3.0f%%  %s  ETA %s" % (size_text(done), size_text(total), pct,
                                            bytes_rate(rate), eta)
