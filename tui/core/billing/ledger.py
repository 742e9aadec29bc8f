"""The ledger: one row per billing session, in SQLite under the platform state dir.

A billing session is one (host, boot id): reconnects and app restarts continue it, a
reboot of the box starts a new one. Every write is one transaction (WAL journal, busy
timeout for concurrent gputui processes), so a crash loses at most the write in
flight. Only a file SQLite says is not a database (or is malformed) is moved aside, with
a clear message, never dropped. A ledger another process holds locked is waited for
(`timeout` seconds) and then reported with who holds it; it is never moved aside.
"""

import atexit
import contextlib
import datetime
import io
import json
import os
import sqlite3
import time
import weakref
from typing import Any, Dict, Iterator, List, Optional, Sequence

from tui.core import config
from tui.core.text.boxtext import visible
from tui.core.text.cells import columns  # headers padded in terminal columns (CJK)
from tui.core.i18n import _

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id INTEGER PRIMARY KEY,
    host TEXT NOT NULL,
    boot_id TEXT NOT NULL,
    gpu_model TEXT,
    gpu_count INTEGER,
    provider TEXT,
    start REAL NOT NULL,
    end REAL,
    rate REAL,
    currency TEXT,
    granularity TEXT,
    cost REAL,
    idle_seconds REAL NOT NULL DEFAULT 0,
    idle_until REAL,
    idle_cost REAL,
    ended_how TEXT,
    checklist TEXT,
    first_contact REAL NOT NULL,
    last_contact REAL NOT NULL,
    UNIQUE (host, boot_id)
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
"""
SCHEMA_VERSION = "1"
COLUMNS = ("id", "host", "boot_id", "gpu_model", "gpu_count", "provider", "start", "end",
           "hours", "rate", "currency", "granularity", "cost", "idle_seconds", "idle_cost",
           "ended_how", "checklist")


# Several clients (two apps, the fleet, the exporter) write the same row; each knows what it
# saw. Counters that only grow are merged as the largest, so the last writer never takes
# them back. A None leaves the stored value.
MONOTONE = ("idle_seconds", "idle_until", "last_contact")


def ledger_path() -> str:
    return os.path.join(config.state_dir(), "ledger.sqlite3")


def make_private_dir(path: str) -> str:  # tui.core.private, imported here to keep ledger's import lines as they are
    from tui.core.private import make_private_dir as make
    return make(path)


def open_private(path: str, flags: int) -> int:
    from tui.core.private import open_private as opener
    return opener(path, flags)


class LedgerError(Exception):
    pass


class Corrupt(sqlite3.DatabaseError):
    """SQLite opened the file but its own check says the content is damaged."""


SQLITE_BUSY, SQLITE_LOCKED, SQLITE_CORRUPT, SQLITE_NOTADB = 5, 6, 11, 26


def says_not_a_database(exc: BaseException) -> bool:
    """Only this moves a ledger aside: SQLite itself says the file is not a database
    or is malformed. Locked, busy, read-only, I/O and permission errors never do."""
    if isinstance(exc, Corrupt):
        return True
    code = getattr(exc, "sqlite_errorcode", None)  # Python >= 3.11
    if code is not None:
        return code & 0xFF in (SQLITE_CORRUPT, SQLITE_NOTADB)
    text = str(exc)
    return "file is not a database" in text or "malformed" in text


def is_locked(exc: BaseException) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (SQLITE_BUSY, SQLITE_LOCKED)
    return "locked" in str(exc) or "busy" in str(exc)


def lock_holders(path: str) -> List[str]:
    """Who holds a lock on the ledger (or has it open): ['pid 123 (python x.py)', ...].

    Linux: the POSIX locks in /proc/locks on the file and its -wal/-shm, write locks
    first; then processes with the file open. Elsewhere (or if nothing is found): []."""
    inodes: Dict[int, str] = {}
    for suffix in ("", "-wal", "-shm"):
        try:
            inodes[os.stat(path + suffix).st_ino] = suffix
        except OSError:
            pass
    me = os.getpid()
    writers: List[int] = []
    readers: List[int] = []
    try:
        with open("/proc/locks") as f:
            for line in f:
                fields = line.split()
                if "->" in fields or len(fields) < 6:
                    continue  # a waiter, not a holder
                try:
                    pid, inode = int(fields[4]), int(fields[5].rsplit(":", 1)[1])
                except (ValueError, IndexError):
                    continue
                if inode in inodes and pid != me:
                    (writers if fields[3] == "WRITE" else readers).append(pid)
    except OSError:
        pass
    pids = list(dict.fromkeys(writers + readers))
    if not pids:
        pids = _pids_with_open(path, me)
    return ["pid %d (%s)" % (pid, _cmdline(pid)) for pid in pids[:5]]


def _pids_with_open(path: str, me: int) -> List[int]:
    real = os.path.realpath(path)
    found: List[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        fd_dir = "/proc/%s/fd" % entry
        try:
            for fd in os.listdir(fd_dir):
                if os.readlink(os.path.join(fd_dir, fd)) == real:
                    found.append(int(entry))
                    break
        except OSError:
            continue
    return found


def _cmdline(pid: int) -> str:
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = f.read().rstrip(b"\0").split(b"\0")
    except OSError:
        return "?"
    return visible(b" ".join(argv), limit=80)


_OPEN: "weakref.WeakSet[Ledger]" = weakref.WeakSet()


@atexit.register
def _close_open_ledgers() -> None:
    """The CLI's quick exit (tui/cli/process_exit.py) skips the interpreter's teardown, where
    SQLite would checkpoint and remove the -wal file: closed here, the ledger on disk is one
    file again, as after any ordinary exit."""
    for ledger in list(_OPEN):
        try:
            ledger.close()
        except sqlite3.Error:
            pass


class Ledger:
    def __init__(self, path: Optional[str] = None, timeout: float = 15.0) -> None:
        self.path = path or ledger_path()
        self.timeout = timeout  # seconds to wait for another process's lock
        self.notice: Optional[str] = None  # a message for the user (e.g. "corrupt file moved aside")
        make_private_dir(os.path.dirname(self.path) or ".")
        self._create_private()
        try:
            self.db = self._open_waiting()
        except sqlite3.DatabaseError as exc:
            if not says_not_a_database(exc):
                raise LedgerError(self._explain("cannot open", exc))
            self.notice = self._move_aside(exc)
            try:
                self.db = self._open_waiting()
            except sqlite3.Error as exc2:
                raise LedgerError(self._explain("cannot open", exc2))
        except sqlite3.Error as exc:
            raise LedgerError(self._explain("cannot open", exc))
        _OPEN.add(self)

    def _create_private(self) -> None:
        """Create the file 0600 before SQLite does (it would use 0644 under a normal umask);
        SQLite gives its -wal and -shm files the database file's mode."""
        try:
            os.close(open_private(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)))
        except OSError:
            pass  # SQLite's own open says what is wrong, with the path

    def _explain(self, what: str, exc: BaseException) -> str:
        """One line for the user; a lock says who holds it and that nothing was lost."""
        if isinstance(exc, sqlite3.OperationalError) and is_locked(exc):
            who = lock_holders(self.path)
            return ("%s the ledger %s: another process has held it locked for over %g s (%s). "
                    "Nothing was changed or moved; try again when it is done." % (
                        what, self.path, self.timeout,
                        ", ".join(who) if who else "holder unknown"))
        return "%s the ledger %s: %s" % (what, self.path, exc)

    def _open_waiting(self) -> sqlite3.Connection:
        """_open, again while the file is locked: SQLite answers BUSY at once (without
        its busy timeout) when two processes create or switch the journal together."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return self._open()
            except sqlite3.OperationalError as exc:
                if not is_locked(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.05)

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        db.row_factory = sqlite3.Row
        try:
            db.execute("PRAGMA busy_timeout = %d" % int(self.timeout * 1000))
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = FULL")  # a power cut loses nothing either
            ok = db.execute("PRAGMA quick_check").fetchone()[0]
            if ok != "ok":
                raise Corrupt("integrity check failed: %s" % ok)
            with self._tx(db):
                for statement in SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
        except sqlite3.Error:
            db.close()
            raise
        return db

    @staticmethod
    @contextlib.contextmanager
    def _tx(db: sqlite3.Connection) -> Iterator[None]:
        """One write transaction; IMMEDIATE takes the write lock up front so two gputui
        processes queue (busy_timeout) instead of failing halfway."""
        db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def _move_aside(self, exc: BaseException) -> str:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        aside = "%s.corrupt-%s" % (self.path, stamp)
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(self.path + suffix):
                os.replace(self.path + suffix, aside + suffix)
        self._create_private()
        return ("The ledger %s could not be read (%s). It was moved to %s and a new ledger "
                "was started; the old file is kept for recovery." % (self.path, exc, aside))

    def close(self) -> None:
        self.db.close()
        _OPEN.discard(self)

    def __del__(self) -> None:
        # A ledger dropped without close(): the connection's own teardown leaves its cached
        # statements to the interpreter's, which the quick exit skips (the -wal file stays)
        db = getattr(self, "db", None)
        if db is not None:
            try:
                db.close()
            except sqlite3.Error:
                pass

    # -- writes --------------------------------------------------------------------
    def open_session(self, host: str, boot_id: Optional[str], start: Optional[float], gpu_model: Optional[str] = None,
                     gpu_count: Optional[int] = None, provider: Optional[str] = None,
                     rate: Optional[float] = None, currency: Optional[str] = None,
                     granularity: Optional[str] = None, now: Optional[float] = None) -> Dict[str, Any]:
        """Open the billing session of (host, boot) or continue it. -> dict row."""
        now = time.time() if now is None else now
        try:
            with self._tx(self.db):
                self.db.execute(
                    """INSERT INTO sessions (host, boot_id, gpu_model, gpu_count, provider, start,
                           rate, currency, granularity, first_contact, last_contact)
                       VALUES (?,?,?,?,?,?,?,?,?,?,?)
                       ON CONFLICT (host, boot_id) DO UPDATE SET
                           last_contact = max(last_contact, excluded.last_contact),
                           gpu_model = coalesce(excluded.gpu_model, gpu_model),
                           gpu_count = coalesce(excluded.gpu_count, gpu_count),
                           provider = coalesce(excluded.provider, provider),
                           start = excluded.start,
                           rate = coalesce(excluded.rate, rate),
                           currency = coalesce(excluded.currency, currency),
                           granularity = coalesce(excluded.granularity, granularity)""",
                    (host, boot_id or "unknown", gpu_model, gpu_count, provider, start, rate,
                     currency, granularity, now, now))
        except sqlite3.Error as exc:
            raise LedgerError(self._explain("cannot write", exc))
        row = self.get(host, boot_id or "unknown")
        if row is None:  # the upsert above wrote it: only another process deleting it gets here
            raise LedgerError("the ledger %s lost the session it just wrote" % self.path)
        return row

    def update(self, session_id: int, **values: Any) -> None:
        """Record progress (end, cost, idle...). One transaction."""
        allowed = {"end", "rate", "currency", "granularity", "cost", "idle_seconds", "idle_until",
                   "idle_cost", "ended_how", "checklist", "last_contact", "start"}
        bad = set(values) - allowed
        if bad:
            raise ValueError("unknown ledger fields: %s" % ", ".join(sorted(bad)))
        if "checklist" in values and not isinstance(values["checklist"], (str, type(None))):
            values["checklist"] = json.dumps(values["checklist"])
        sets = ", ".join(("%s = coalesce(max(%s, ?), ?, %s)" % (k, k, k)) if k in MONOTONE else "%s = ?" % k
                         for k in values)
        args: List[Any] = []
        for k, v in values.items():
            args += [v, v] if k in MONOTONE else [v]
        try:
            with self._tx(self.db):
                self.db.execute("UPDATE sessions SET %s WHERE id = ?" % sets, args + [session_id])
        except sqlite3.Error as exc:
            raise LedgerError(self._explain("cannot write", exc))

    # -- reads ---------------------------------------------------------------------
    def _read(self, sql: str, args: Sequence[Any] = ()) -> List[sqlite3.Row]:
        try:
            return self.db.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise LedgerError(self._explain("cannot read", exc))

    def get(self, host: str, boot_id: str) -> Optional[Dict[str, Any]]:
        rows = self._read("SELECT * FROM sessions WHERE host = ? AND boot_id = ?", (host, boot_id))
        return dict(rows[0]) if rows else None

    def cost_since(self, t0: float, exclude_id: Optional[int] = None) -> float:
        """Money recorded by sessions in contact since t0 (for the per-day budget)."""
        rows = self._read(
            "SELECT coalesce(sum(cost), 0) FROM sessions WHERE last_contact >= ? AND id IS NOT ?",
            (t0, exclude_id))
        return float(rows[0][0])

    def sessions(self) -> List[Dict[str, Any]]:
        out = []
        for row in self._read("SELECT * FROM sessions ORDER BY start"):
            d = dict(row)
            end = d["end"] or d["last_contact"]
            d["hours"] = round((end - d["start"]) / 3600.0, 3) if end and d["start"] else None
            out.append(d)
        return out


def _fmt_time(t: Optional[float]) -> str:
    return datetime.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M") if t else "—"


def ledger_table(rows: Sequence[Dict[str, Any]]) -> str:
    """The human table `gputui ledger` prints."""
    from tui.core.billing.rates import format_money
    head = columns((("ID", -4), (_("HOST"), -18), ("GPU", -18), (_("START"), -16), (_("END"), -16),
                    (_("HOURS"), 7), (_("COST"), 10), (_("IDLE COST"), 10), ("", 0))) + " " + _("ENDED")
    lines = [head]
    for r in rows:
        # host is what the user typed, gpu_model and ended_how came from the box
        gpu = visible("%sx %s" % (r["gpu_count"], r["gpu_model"]) if r["gpu_count"] else "—", limit=18)
        lines.append("%-4d %-18s %-18s %-16s %-16s %7s %10s %10s  %s" % (
            r["id"], visible(r["host"], limit=18), gpu, _fmt_time(r["start"]),
            _fmt_time(r["end"]) if r["end"] else _("open"),
            "%.2f" % r["hours"] if r["hours"] is not None else "—",
            format_money(r["cost"], r["currency"] or "CNY"),
            format_money(r["idle_cost"], r["currency"] or "CNY"),
            visible(r["ended_how"], limit=40)))
    if not rows:
        lines.append(_("(no billing sessions yet: every box gputui touches is recorded here)"))
    return "\n".join(lines)


def ledger_csv(rows: Sequence[Dict[str, Any]]) -> str:
    buf = io.StringIO()
    import csv  # only for an export: not held by every run
    w = csv.DictWriter(buf, fieldnames=COLUMNS, extrasaction="ignore")
    w.writeheader()
    for r in rows:  # text cells from the box: visible, so a spreadsheet or cat shows them inert
        w.writerow({k: visible(v) if isinstance(v, str) else v for k, v in r.items()})
    return buf.getvalue()
