"""The ledger under several clients and faults (issue 20): counters merge as the largest and
never go back, an unreachable box's row stops at the last contact, a corrupt ledger makes
`gputui ledger` fail loudly, and the file is private whatever the umask."""

import os
import subprocess
import sys

from tui.core.billing.clock import BillingClock
from tui.core.config import HostConfig
from tui.core.billing.ledger import Ledger

from tests.unit.tui.core.test_billing_clock import inventory


def test_two_clients_merge_counters_and_the_last_writer_never_takes_them_back(tmp_path):
    path = str(tmp_path / "l.db")
    a, b = Ledger(path), Ledger(path)
    row = a.open_session("box", "b1", 1000.0, now=1000.0)
    a.update(row["id"], idle_seconds=100.0, idle_until=1100.0, last_contact=1100.0, cost=5.0)
    b.update(row["id"], idle_seconds=60.0, idle_until=1050.0, last_contact=1050.0, cost=4.0)
    got = Ledger(path).get("box", "b1")
    assert (got["idle_seconds"], got["idle_until"], got["last_contact"]) == (100.0, 1100.0, 1100.0)
    assert got["cost"] == 4.0  # not a counter: a rate change may lower it
    b.open_session("box", "b1", 1000.0, now=1070.0)  # a reconnect that arrives late
    assert Ledger(path).get("box", "b1")["last_contact"] == 1100.0
    a.update(row["id"], idle_until=None)  # unknown leaves what is known
    assert Ledger(path).get("box", "b1")["idle_until"] == 1100.0


def test_an_unreachable_box_stops_rising_in_the_ledger(tmp_path):
    ledger = Ledger(str(tmp_path / "l.db"))
    t = [1000.0]
    clock = BillingClock("box", HostConfig(rate=36.0), ledger, clock=lambda: t[0])
    clock.on_inventory(inventory(start=1000.0))
    for i in range(5):
        t[0] = 1000.0 + i
        clock.on_sample({"t": t[0], "seq": i + 1, "gpus": [[0] + [None] * 10], "procs": []})
    clock.persist(force=True)
    first = ledger.get("box", "boot-1")
    for _ in range(30):  # the link is down: the app's tick still persists every few seconds
        t[0] += 20.0
        clock.persist(force=True)
    row = ledger.get("box", "boot-1")
    assert row["last_contact"] == 1004.0 == first["last_contact"]
    assert row["cost"] == first["cost"] and round(row["cost"], 3) == round(36.0 * 4 / 3600, 3)
    t[0] += 1
    clock.on_sample({"t": t[0], "seq": 6, "gpus": [[0] + [None] * 10], "procs": []})
    clock.persist(force=True)
    assert ledger.get("box", "boot-1")["last_contact"] == t[0]  # back in contact: it moves on


def test_cli_ledger_on_a_corrupt_ledger_fails_with_the_message(isolated_dirs):
    from tui.core.config import state_dir
    os.makedirs(state_dir(), exist_ok=True)
    for args in (["ledger", "--json"], ["ledger"]):
        with open(os.path.join(state_dir(), "ledger.sqlite3"), "wb") as f:
            f.write(b"not a database " * 200)
        r = subprocess.run([sys.executable, "-m", "tui"] + args, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=60, check=False)
        assert r.returncode != 0, (args, r.stdout)
        assert r.stdout == ""  # no "[]" that a script would take for "no sessions"
        assert "could not be read" in r.stderr and "moved to" in r.stderr


def test_ledger_files_are_private_whatever_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        led = Ledger(str(tmp_path / "state" / "l.db"))
        led.open_session("box", "b1", 1.0)
    finally:
        os.umask(old)
    for name in ("l.db", "l.db-wal", "l.db-shm"):
        assert os.stat(tmp_path / "state" / name).st_mode & 0o777 == 0o600, name
    assert os.stat(tmp_path / "state").st_mode & 0o777 == 0o700


def test_the_cli_leaves_the_ledger_one_file_after_its_quick_exit(isolated_dirs):
    """The quick exit (tui/cli/process_exit.py) skips the interpreter's teardown: the ledger
    is still closed, so SQLite folds its -wal back in (an overwritten main file then reads
    as corrupt, as above, instead of an empty ledger from the leftover -wal)."""
    from tui.core.config import state_dir
    r = subprocess.run([sys.executable, "-m", "tui", "ledger"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    assert sorted(n for n in os.listdir(state_dir()) if n.startswith("ledger")) == ["ledger.sqlite3"]
