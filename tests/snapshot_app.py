"""Moved to tests/support/snapshot_app.py (shim until tests-move.py rewrites the imports and removes it)."""
from tests.support.snapshot_app import *  # noqa: F401,F403
