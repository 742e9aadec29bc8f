"""The ledger: sessions per (host, boot), concurrency, crashes, corrupt files."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

from tui.core.billing.ledger import Ledger, ledger_csv, ledger_table

from tests.support.sshd import REPO


def test_reconnects_continue_a_session_and_a_reboot_starts_a_new_one(tmp_path):
    led = Ledger(str(tmp_path / "l.db"))
    a = led.open_session("box", "boot-1", 1000.0, gpu_model="A100", gpu_count=2, rate=2.5, now=1100)
    b = led.open_session("box", "boot-1", 1000.0, now=1200)
    assert a["id"] == b["id"] and b["gpu_model"] == "A100" and b["rate"] == 2.5
    assert b["last_contact"] == 1200
    c = led.open_session("box", "boot-2", 5000.0, now=5100)
    assert c["id"] != a["id"]
    led.update(a["id"], cost=12.5, idle_seconds=60, idle_cost=0.04, ended_how="released", end=2000)
    rows = led.sessions()
    assert [r["boot_id"] for r in rows] == ["boot-1", "boot-2"]
    assert rows[0]["hours"] == round(1000 / 3600, 3)
    table = ledger_table(rows)
    assert "released" in table and "¥12.50" in table and "open" in table
    assert ledger_csv(rows).splitlines()[0].startswith("id,host,boot_id")


WRITER = r"""
import sys, time
sys.path.insert(0, %r)
from tui.core.billing.ledger import Ledger
led = Ledger(sys.argv[1])
name = sys.argv[2]
for i in range(int(sys.argv[3])):
    row = led.open_session(name, "boot-%%d" %% i, 1000.0 + i)
    led.update(row["id"], cost=float(i))
    print(i, flush=True)
"""


def test_concurrent_writers_lose_no_rows(tmp_path):
    path = str(tmp_path / "l.db")
    procs = [subprocess.Popen([sys.executable, "-c", WRITER % REPO, path, "host%d" % n, "40"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for n in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    rows = Ledger(path).sessions()
    assert len(rows) == 4 * 40
    assert all(r["cost"] == float(r["boot_id"].split("-")[1]) for r in rows)


def test_a_writer_killed_mid_write_loses_nothing_committed(tmp_path):
    path = str(tmp_path / "l.db")
    p = subprocess.Popen([sys.executable, "-c", WRITER % REPO, path, "victim", "100000"],
                         stdout=subprocess.PIPE)
    done = -1
    deadline = time.time() + 30
    while done < 50 and time.time() < deadline:
        done = int(p.stdout.readline())
    p.send_signal(signal.SIGKILL)
    p.wait()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()
    rows = Ledger(path).sessions()
    # every session the writer reported as written is there, with its cost
    assert len(rows) >= done + 1
    by_boot = {r["boot_id"]: r for r in rows}
    for i in range(done + 1):
        assert by_boot["boot-%d" % i]["cost"] == float(i)


def test_corrupt_ledger_is_moved_aside_with_a_message(tmp_path):
    path = tmp_path / "l.db"
    path.write_bytes(b"this is not a sqlite database at all" * 100)
    led = Ledger(str(path))
    assert led.notice and "could not be read" in led.notice and "moved to" in led.notice
    aside = [n for n in os.listdir(tmp_path) if ".corrupt-" in n]
    assert aside and (tmp_path / aside[0]).read_bytes().startswith(b"this is not")
    led.open_session("box", "b", 1.0)
    assert len(led.sessions()) == 1


def test_cli_ledger_json_and_csv(tmp_path, monkeypatch):
    from tui.core.config import state_dir
    led = Ledger()
    led.open_session("box", "b1", 1000.0, rate=2.0, currency="USD")
    led.close()
    out = subprocess.run([sys.executable, "-m", "tui", "ledger", "--json"], stdout=subprocess.PIPE,
                         text=True, check=True, env=os.environ).stdout
    rows = json.loads(out)
    assert rows[0]["host"] == "box" and rows[0]["currency"] == "USD"
    out = subprocess.run([sys.executable, "-m", "tui", "ledger", "--csv"], stdout=subprocess.PIPE,
                         text=True, check=True).stdout
    assert out.splitlines()[1].startswith("1,box,b1")
    assert os.path.exists(os.path.join(state_dir(), "ledger.sqlite3"))


HOLDER = r"""
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA journal_mode = WAL")
db.execute("BEGIN IMMEDIATE")
db.execute("INSERT INTO sessions (host, boot_id, start, first_contact, last_contact) VALUES ('holder', 'b', 1, 1, 1)")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
db.execute("COMMIT")
"""


def _hold(path, seconds):
    p = subprocess.Popen([sys.executable, "-c", HOLDER, path, str(seconds)], stdout=subprocess.PIPE)
    assert p.stdout.readline().strip() == b"locked"
    return p


def test_a_locked_ledger_is_waited_for_then_reported_with_its_holder_never_moved(tmp_path):
    from tui.core.billing.ledger import LedgerError
    path = str(tmp_path / "l.db")
    led = Ledger(path)
    led.open_session("box", "boot-1", 1000.0)
    led.close()
    holder = _hold(path, 30)
    try:
        t0 = time.monotonic()
        try:
            Ledger(path, timeout=1.0)
            raise AssertionError("opened a ledger another process holds locked")
        except LedgerError as exc:
            message = str(exc)
        assert time.monotonic() - t0 >= 0.9  # it waited
        assert "locked" in message and "pid %d" % holder.pid in message and "HOLDER" not in message
        assert "Nothing was changed or moved" in message
    finally:
        holder.kill()
        holder.wait()
    assert not [n for n in os.listdir(tmp_path) if ".corrupt-" in n]
    rows = Ledger(path).sessions()
    assert [r["host"] for r in rows] == ["box"]  # the earlier session is still there


def test_a_lock_released_within_the_timeout_is_simply_waited_for(tmp_path):
    path = str(tmp_path / "l.db")
    Ledger(path).close()
    holder = _hold(path, 1.0)
    led = Ledger(path, timeout=20)
    row = led.open_session("box", "boot-1", 1000.0)
    holder.wait(20)
    assert row["host"] == "box"
    assert sorted(r["host"] for r in led.sessions()) == ["box", "holder"]
    assert led.notice is None


def test_unreadable_ledger_is_an_error_not_a_move(tmp_path):
    from tui.core.billing.ledger import LedgerError
    if os.geteuid() == 0:
        # root reads anything: use a directory where the file should be instead
        path = tmp_path / "l.db"
        path.mkdir()
    else:
        path = tmp_path / "l.db"
        Ledger(str(path)).close()
        os.chmod(path, 0)
    try:
        Ledger(str(path))
        raise AssertionError("opened an unreadable ledger")
    except LedgerError as exc:
        assert str(path) in str(exc)
    assert not [n for n in os.listdir(tmp_path) if ".corrupt-" in n]


def test_ledger_table_shows_box_text_inert():
    from tests.support.hostile import NAMES, assert_inert
    rows = [{"id": i, "host": "h", "gpu_count": 1, "gpu_model": n, "start": 1000.0, "end": None,
             "hours": 1.0, "cost": 1.0, "idle_cost": 0.0, "currency": "USD", "ended_how": n}
            for i, n in enumerate(NAMES)]
    assert_inert(ledger_table(rows))


def test_cli_ledger_on_a_locked_ledger_says_who_and_moves_nothing(tmp_path):
    from tui.core.config import state_dir
    path = os.path.join(state_dir(), "ledger.sqlite3")
    led = Ledger(path)
    led.open_session("box", "b1", 1000.0)
    led.close()
    holder = _hold(path, 60)
    try:
        r = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, %r); "
                            "import tui.core.billing.ledger as l; l.Ledger.__init__.__defaults__ = (None, 1.0); "
                            "from tui.cli import main; sys.exit(main(['ledger']))" % REPO],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        holder.kill()
        holder.wait()
    assert r.returncode == 1 and r.stdout == ""
    assert "pid %d" % holder.pid in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert os.listdir(os.path.dirname(path)).count("ledger.sqlite3") == 1
    assert not [n for n in os.listdir(os.path.dirname(path)) if ".corrupt-" in n]
    assert [row["host"] for row in Ledger(path).sessions()] == ["box"]
