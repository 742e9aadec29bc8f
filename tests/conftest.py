"""Registers the shared fixtures (tests/support/) for every test, isolates each test's gputui
dirs, and marks the tests that start sshd so `pytest -m "not sshd"` is the fast lane."""

import os

import pytest

pytest.register_assert_rewrite("tests.support")  # before the re-export below imports them

pytest_plugins = [
    "tests.support.sshd",
    "tests.support.user_world",
    "tests.support.pty_fixtures",
    "tests.support.fleet_fixtures",
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
    for item in items:
        path = str(item.fspath)
        if path.startswith(E2E_DIR) or os.path.basename(path).startswith("test_e2e_") \
                or SSHD_FIXTURES.intersection(item.fixturenames):
            item.add_marker(mark)


@pytest.fixture(autouse=True)
def isolated_dirs(tmp_path_factory, monkeypatch):
    """No test reads or writes the real user's config or ledger."""
    base = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("GPUTUI_CONFIG_DIR", str(base / "config"))
    monkeypatch.setenv("GPUTUI_STATE_DIR", str(base / "state"))
    monkeypatch.setenv("GPUTUI_DATA_DIR", str(base / "data"))
    return base
