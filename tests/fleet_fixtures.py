"""Moved to tests/support/fleet_fixtures.py (shim until tests-move.py rewrites the imports and removes it)."""
from tests.support.fleet_fixtures import *  # noqa: F401,F403
