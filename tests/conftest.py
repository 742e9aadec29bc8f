"""Registers the shared fixtures (tests/support/) for every test, isolates each test's gputui
dirs, and marks the tests that start sshd so `pytest -m "not sshd"` is the fast lane."""

import itertools
import os
import sys

import pytest

# The lab's shell (and CI's) exports PYTHONDONTWRITEBYTECODE=1: every xdist worker then
# re-rewrote and recompiled every test module, and every `python -m tui` a test starts
# recompiled gputui itself (8 s of CPU per worker to collect, on a 2-core box). Caches on.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

pytest.register_assert_rewrite("tests.support")  # before anything below imports them

from tests.support.durations import recorded_durations  # noqa: E402

# Property tests: CI (.ci/run sets GPUTUI_CI) draws the same examples on every run of a commit,
# so a landing never hangs on one unlucky draw; elsewhere each run draws new ones, and what they
# find is fixed and kept as an @example.
from hypothesis import settings  # noqa: E402

settings.register_profile("ci", derandomize=True)
if os.environ.get("GPUTUI_CI"):
    settings.load_profile("ci")

pytest_plugins = [
    "tests.support.sshd",
    "tests.support.user_world",
    "tests.support.pty_fixtures",
    "tests.support.fleet_fixtures",
    "tests.support.webhook",
]


E2E_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "e2e") + os.sep

# Fixtures that start an sshd (directly or through another fixture): a test that uses one is
# an sshd test wherever it lives.
SSHD_FIXTURES = frozenset({
    "sshbox", "untrusted_sshbox", "user_world", "pw_box", "kbd_box", "pty_only_box",
    "chatty_box", "readonly_cache_box", "simfleet",
    "demo_box",  # not OpenSSH, but a real ssh server with a probe daemon: as slow, and e2e
})


def pytest_collection_modifyitems(config, items):
    mark = pytest.mark.sshd
    slow = set()
    for item in items:
        path = str(item.fspath)
        if path.startswith(E2E_DIR) or os.path.basename(path).startswith("test_e2e_") \
                or SSHD_FIXTURES.intersection(item.fixturenames):
            item.add_marker(mark)
            slow.add(item.nodeid)
    # Longest first (the recorded durations, then the other end-to-end tests, which take 5-40 s
    # each, mostly waiting), the quick unit tests last: xdist's workers then fill the last
    # minute with small tests instead of one worker finishing a 40 s test alone (tests are
    # order-independent; xdist reorders anyway). Refresh the record: tests/support/durations.py.
    took = recorded_durations()
    items.sort(key=lambda item: (-took.get(item.nodeid, 0.0), item.nodeid not in slow))
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
    if workers > 1:
        items[:] = dealt(items, workers, sum(1 for item in items if item.nodeid in took))


def dealt(items, workers, long):
    """items with their first `long` ones dealt like cards to the heads of the slices xdist's
    worksteal hands out, the rest in order behind them.

    worksteal gives each worker one contiguous slice of the collection to start with and steals
    from the slices' tails, never their heads: longest-first alone put the ten longest tests
    (80, 42, 35 s …) at the head of one slice, and that worker ran them one after another while
    the others had finished (one worker ran 10 tests in 291 s of a 299 s run)."""
    sizes, left = [], len(items)
    for i in range(workers):  # worksteal's own split: len(pending) // nodes_remaining
        sizes.append(left // (workers - i))
        left -= sizes[-1]
    slices = [items[i:long:workers] for i in range(workers)]
    rest = iter(items[long:])
    for part, size in zip(slices, sizes):
        part.extend(itertools.islice(rest, max(0, size - len(part))))
    return [item for part in slices for item in part] + list(rest)


@pytest.fixture(autouse=True)
def isolated_dirs(tmp_path_factory, monkeypatch):
    """No test reads or writes the real user's config or ledger."""
    base = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("GPUTUI_CONFIG_DIR", str(base / "config"))
    monkeypatch.setenv("GPUTUI_STATE_DIR", str(base / "state"))
    monkeypatch.setenv("GPUTUI_DATA_DIR", str(base / "data"))
    return base
