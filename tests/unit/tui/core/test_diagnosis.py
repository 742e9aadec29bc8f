import pytest

from tui.core import from_wire
from tui.core.checks.diagnosis import LoaderFacts, diagnose, orphaned_workers

BUSY_GPU = [95, 96, 97, 94, 95]
DIPPING_GPU = [95, 10, 96, 5, 90, 8]

CASES = [
    ("no stats", LoaderFacts(None, None), "unknown", None, "no dataloader stats"),
    ("fine", LoaderFacts(0.05, 8, BUSY_GPU), "ok", None, "not data-bound: 5%"),
    ("waits but GPU busy", LoaderFacts(0.5, 8, BUSY_GPU), "ok", None, "GPU stays busy"),
    ("no workers", LoaderFacts(0.62, 0, DIPPING_GPU, ncpu=16, box_cpu=10), "starved", "no_workers",
     "num_workers=0 loads every batch in the training process → set num_workers=8 and pin_memory=True"),
    ("workers at 100%, cores idle",
     LoaderFacts(0.62, 4, DIPPING_GPU, worker_cpu=[99, 100, 98, 100], worker_states=["R"] * 4,
                 ncpu=16, box_cpu=25),
     "starved", "workers_busy",
     "GPU starved by data loading: 62% of step time waiting for batches; 4 workers each at ~100% CPU; "
     "12 cores idle → raise num_workers (try 16)"),
    ("I/O bound", LoaderFacts(0.7, 4, DIPPING_GPU, worker_cpu=[10, 5, 8, 7], worker_states=["D", "D", "D", "S"],
                              ncpu=16, box_cpu=20, disk_busy=97),
     "starved", "io", "3 of 4 workers in I/O wait, disk busy 97% → copy the dataset to local disk"),
    ("CPU saturated", LoaderFacts(0.5, 12, DIPPING_GPU, worker_cpu=[100] * 12, worker_states=["R"] * 12,
                                  ncpu=8, box_cpu=98),
     "starved", "cpu_saturated", "box CPU saturated (98%)"),
    ("slow loader", LoaderFacts(0.4, 4, DIPPING_GPU, worker_cpu=[30, 20, 25, 20], worker_states=["S"] * 4,
                                ncpu=16, box_cpu=20),
     "starved", "slow_loader", "raise prefetch_factor"),
    ("workers' CPU unread", LoaderFacts(0.42, 12, DIPPING_GPU, worker_cpu=[None] * 12, ncpu=16, box_cpu=60),
     "starved", "workers_unknown", "the workers' CPU could not be read"),
    ("short history", LoaderFacts(0.5, 0, [10]), "waiting", "no_workers", "GPU history too short"),
]


@pytest.mark.parametrize("name, facts, verdict, cause, text", CASES, ids=[c[0] for c in CASES])
def test_diagnose(name, facts, verdict, cause, text):
    d = diagnose(facts)
    assert (d.verdict, d.cause) == (verdict, cause)
    assert text in d.line


def test_orphans_that_hold_resources_are_flagged():
    orphans = [{"pid": 1, "cpu": 0, "rss": 10}, {"pid": 2, "cpu": 50, "rss": 10}, {"pid": 3, "cpu": 0, "rss": 900}]
    assert [o.pid for o in orphaned_workers(from_wire.workers(orphans))] == [2, 3]
