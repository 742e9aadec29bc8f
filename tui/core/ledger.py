"""The ledger: one row per billing session, in SQLite under the platform state dir.

A billing session is one (host, boot id): reconnects and app restarts continue it, a
reboot of the box starts a new one. Every write is one transaction (WAL journal, busy
timeout for concurrent gputui processes), so a crash loses at most the write in
flight. A file SQLite cannot read is moved aside with a clear message, never dropped.
"""

import contextlib
import csv
import datetime
import io
import json
import os
import sqlite3
import time

from tui.core import config

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


def ledger_path():
    return os.path.join(config.state_dir(), "ledger.sqlite3")


class LedgerError(Exception):
    pass


class Ledger:
    def __init__(self, path=None):
        self.path = path or ledger_path()
        self.notice = None  # a message for the user (e.g. "corrupt file moved aside")
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        try:
            self.db = self._open()
        except sqlite3.DatabaseError as exc:
            self.notice = self._move_aside(exc)
            self.db = self._open()

    def _open(self):
        db = sqlite3.connect(self.path, timeout=15, isolation_level=None)
        db.row_factory = sqlite3.Row
        try:
            db.execute("PRAGMA busy_timeout = 15000")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = FULL")  # a power cut loses nothing either
            ok = db.execute("PRAGMA quick_check").fetchone()[0]
            if ok != "ok":
                raise sqlite3.DatabaseError("integrity check failed: %s" % ok)
            with self._tx(db):
                for statement in SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
        except sqlite3.DatabaseError:
            db.close()
            raise
        return db

    @staticmethod
    @contextlib.contextmanager
    def _tx(db):
        """One write transaction; IMMEDIATE takes the write lock up front so two gputui
        processes queue (busy_timeout) instead of failing halfway."""
        db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def _move_aside(self, exc):
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        aside = "%s.corrupt-%s" % (self.path, stamp)
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(self.path + suffix):
                os.replace(self.path + suffix, aside + suffix)
        return ("The ledger %s could not be read (%s). It was moved to %s and a new ledger "
                "was started; the old file is kept for recovery." % (self.path, exc, aside))

    def close(self):
        self.db.close()

    # -- writes --------------------------------------------------------------------
    def open_session(self, host, boot_id, start, gpu_model=None, gpu_count=None, provider=None,
                     rate=None, currency=None, granularity=None, now=None):
        """Open the billing session of (host, boot) or continue it. -> dict row."""
        now = time.time() if now is None else now
        try:
            with self._tx(self.db):
                self.db.execute(
                    """INSERT INTO sessions (host, boot_id, gpu_model, gpu_count, provider, start,
                           rate, currency, granularity, first_contact, last_contact)
                       VALUES (?,?,?,?,?,?,?,?,?,?,?)
                       ON CONFLICT (host, boot_id) DO UPDATE SET
                           last_contact = excluded.last_contact,
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
            raise LedgerError("cannot write the ledger %s: %s" % (self.path, exc))
        return self.get(host, boot_id or "unknown")

    def update(self, session_id, **values):
        """Record progress (end, cost, idle...). One transaction."""
        allowed = {"end", "rate", "currency", "granularity", "cost", "idle_seconds", "idle_until",
                   "idle_cost", "ended_how", "checklist", "last_contact", "start"}
        bad = set(values) - allowed
        if bad:
            raise ValueError("unknown ledger fields: %s" % ", ".join(sorted(bad)))
        if "checklist" in values and not isinstance(values["checklist"], (str, type(None))):
            values["checklist"] = json.dumps(values["checklist"])
        sets = ", ".join("%s = ?" % k for k in values)
        try:
            with self._tx(self.db):
                self.db.execute("UPDATE sessions SET %s WHERE id = ?" % sets,
                                list(values.values()) + [session_id])
        except sqlite3.Error as exc:
            raise LedgerError("cannot write the ledger %s: %s" % (self.path, exc))

    # -- reads ---------------------------------------------------------------------
    def get(self, host, boot_id):
        row = self.db.execute("SELECT * FROM sessions WHERE host = ? AND boot_id = ?",
                              (host, boot_id)).fetchone()
        return dict(row) if row else None

    def cost_since(self, t0, exclude_id=None):
        """Money recorded by sessions in contact since t0 (for the per-day budget)."""
        row = self.db.execute(
            "SELECT coalesce(sum(cost), 0) FROM sessions WHERE last_contact >= ? AND id IS NOT ?",
            (t0, exclude_id)).fetchone()
        return float(row[0])

    def sessions(self):
        out = []
        for row in self.db.execute("SELECT * FROM sessions ORDER BY start"):
            d = dict(row)
            end = d["end"] or d["last_contact"]
            d["hours"] = round((end - d["start"]) / 3600.0, 3) if end and d["start"] else None
            out.append(d)
        return out


def _fmt_time(t):
    return datetime.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M") if t else "—"


def ledger_table(rows):
    """The human table `gputui ledger` prints."""
    from tui.core.billing import format_money
    head = "%-4s %-18s %-18s %-16s %-16s %7s %10s %10s  %s" % (
        "ID", "HOST", "GPU", "START", "END", "HOURS", "COST", "IDLE COST", "ENDED")
    lines = [head]
    for r in rows:
        gpu = ("%sx %s" % (r["gpu_count"], r["gpu_model"])) if r["gpu_count"] else "—"
        lines.append("%-4d %-18s %-18s %-16s %-16s %7s %10s %10s  %s" % (
            r["id"], r["host"][:18], gpu[:18], _fmt_time(r["start"]),
            _fmt_time(r["end"]) if r["end"] else "open",
            "%.2f" % r["hours"] if r["hours"] is not None else "—",
            format_money(r["cost"], r["currency"] or "CNY"),
            format_money(r["idle_cost"], r["currency"] or "CNY"),
            r["ended_how"] or ""))
    if not rows:
        lines.append("(no billing sessions yet: every box gputui touches is recorded here)")
    return "\n".join(lines)


def ledger_csv(rows):
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow(r)
    return buf.getvalue()
