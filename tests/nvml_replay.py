"""Moved to tests/support/nvml_replay.py (shim until tests-move.py rewrites the imports and removes it)."""
from tests.support.nvml_replay import *  # noqa: F401,F403
