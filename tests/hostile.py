"""Moved to tests/support/hostile.py (shim until tests-move.py rewrites the imports and removes it)."""
from tests.support.hostile import *  # noqa: F401,F403
