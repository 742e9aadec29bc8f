"""Fixtures and helpers shared by the tests (registered from tests/conftest.py)."""

import os

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(TESTS)
DATA = os.path.join(TESTS, "data")


def worker_tag():
    """'' in a plain run, 'gw3' in an xdist worker: what keeps users and names per worker."""
    return os.environ.get("PYTEST_XDIST_WORKER", "")


def per_worker(name):
    """`name` suffixed with the xdist worker (gt_b_chatty -> gt_b_chatty_gw3), so parallel
    workers never share a box user; at most 32 characters, as useradd wants."""
    tag = worker_tag()
    out = "%s_%s" % (name, tag) if tag else name
    assert len(out) <= 32, out
    return out
