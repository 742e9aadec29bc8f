"""Moved to tests/support/user_world.py (shim until tests-move.py rewrites the imports and removes it)."""
from tests.support.user_world import *  # noqa: F401,F403
