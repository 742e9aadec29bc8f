"""Moved to tests/support/fleet_canned.py (shim until tests-move.py rewrites the imports and removes it)."""
from tests.support.fleet_canned import *  # noqa: F401,F403
