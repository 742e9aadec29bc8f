"""The fleet pool without the network: ledger writes are spread over ticks (each is an fsync
on the UI's loop), force writes them all."""

from tui.core.config import Config
from tui.core.fleet.rows import FleetHost
from tui.core.billing.ledger import Ledger
from tui.remote.fleet_pool import Fleet


def make_fleet(tmp_path, names, clock):
    cfg = tmp_path / "config.toml"
    cfg.write_text("".join('[hosts.%s]\nrate = 2.0\n' % n for n in names))
    ledger = Ledger(str(tmp_path / "ledger.sqlite3"))
    return Fleet([FleetHost(n) for n in names], Config.load(str(cfg)), ledger,
                 concurrency=3, clock=clock), ledger


async def test_persist_takes_turns_and_force_writes_all(tmp_path):
    now = [1000.0]
    names = ["b%d" % i for i in range(5)]
    fleet, ledger = make_fleet(tmp_path, names, lambda: now[0])
    assert fleet.gate.limit == 3 and set(fleet.sessions) == set(names)
    for b in fleet.boxes:
        b.on_state("live")
        b.on_inventory({"gpus": [], "host": {"boot_id": "boot-" + b.host, "instance_start": 500.0}})
    contact = lambda: {r["host"]: r["last_contact"] for r in ledger.sessions()}  # noqa: E731
    now[0] = 1100.0
    for b in fleet.boxes:  # every box answers at 1100: its row's last contact can advance to it
        b.on_sample({"type": "sample", "seq": 1, "t": 1100.0, "gpus": [], "procs": []})
    fleet.persist()
    assert sorted(h for h, t in contact().items() if t == 1100.0) == ["b0", "b1"]
    fleet.persist()
    assert sorted(h for h, t in contact().items() if t == 1100.0) == ["b0", "b1", "b2", "b3"]
    fleet.persist()
    assert all(t == 1100.0 for t in contact().values())
    now[0] = 1200.0
    for b in fleet.boxes:
        b.on_sample({"type": "sample", "seq": 2, "t": 1200.0, "gpus": [], "procs": []})
    fleet.persist(force=True)
    assert all(t == 1200.0 for t in contact().values())
    costs = {r["host"]: r["cost"] for r in ledger.sessions()}
    assert costs["b4"] == 2.0 * 700 / 3600

