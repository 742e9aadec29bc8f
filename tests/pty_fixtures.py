"""Moved to tests/support/pty_fixtures.py (shim until tests-move.py rewrites the imports and removes it)."""
from tests.support.pty_fixtures import *  # noqa: F401,F403
